import type { CohortConfigInput } from '../../src/config/index.ts';

type Section<K extends keyof CohortConfigInput> = Partial<NonNullable<CohortConfigInput[K]>>;

/**
 * The small, fast federation the service end-to-end tests run: the 2NN on a slice of MNIST, 8-bit
 * updates, 200 ms heartbeats and 20 s deadlines; `round` and `learning` are merged over those, and
 * `rest` (e.g. `federation`, `privacy`) is added as it is.
 */
export function e2eOverrides(
  round: Section<'round'> = {},
  learning: Section<'learning'> = {},
  rest: Partial<CohortConfigInput> = {},
): Partial<CohortConfigInput> {
  return {
    round: {
      heartbeatMs: 200,
      missedHeartbeats: 5,
      deadlineMs: 20_000,
      voteTimeoutMs: 20_000,
      epsilon: 0.25,
      ...round,
    },
    learning: {
      model: '2nn',
      trainLimit: 2000,
      testLimit: 500,
      epochs: 1,
      batchSize: 10,
      learningRate: 0.1,
      ...learning,
    },
    codec: { bits: 8, clip: 0.02, maxContributors: 32, crcChunkBytes: 16_384 },
    log: { level: 'error' },
    ...rest,
  };
}

/**
 * The smallest federation the process tests run: logistic regression on 400 MNIST rows, 200 ms
 * heartbeats (ten to a liveness window), 20 s deadlines and 10 s vote timeouts, so a round takes a
 * second or two; `round` is merged over those, and `rest` (e.g. `history`, `crypto`) is added as it is.
 */
export function logregOverrides(
  round: Section<'round'> = {},
  rest: Partial<CohortConfigInput> = {},
): Partial<CohortConfigInput> {
  return {
    round: { heartbeatMs: 200, missedHeartbeats: 10, deadlineMs: 20_000, voteTimeoutMs: 10_000, ...round },
    learning: { model: 'logreg', trainLimit: 400, testLimit: 50, epochs: 1, batchSize: 20 },
    log: { level: 'error' },
    ...rest,
  };
}
