// Hand-made federation log records for tests.
import type { DecisionBody } from '../../src/protocol/index.ts';

const EMPTY = new Uint8Array(0);

/**
 * An ABORT of `round` on `head` with every other field empty: the base a test spreads its own
 * fields over (a COMMIT sets `commit`, hashes, height, kind, params…).
 */
export function emptyDecision(
  federation: string,
  round: number,
  head: { readonly hash: Uint8Array; readonly height: number },
): DecisionBody {
  return {
    federation,
    round,
    commit: false,
    commitHash: EMPTY,
    modelHash: EMPTY,
    parent: head.hash,
    height: head.height,
    aggregateDigest: EMPTY,
    voters: [],
    reason: '',
    kind: '',
    params: EMPTY,
    aggregate: null,
    rollbackTarget: EMPTY,
    stateHash: EMPTY,
    attempt: EMPTY,
    evaluation: null,
    culprits: [],
    missing: [],
    exclusions: [],
    nextClip: 0,
  };
}
