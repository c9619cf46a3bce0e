import { meanFromSum, type StrategyState } from '../../../federation/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { type AggregateInfo, decodeAggregate } from '../../protocol/index.ts';
import type { AgentCore } from './agent-core.ts';

/** The next model and strategy state. */
export interface AppliedRound {
  readonly parameters: Float32Array;
  readonly strategyState: StrategyState;
}

/**
 * The deterministic step every site takes from a round's aggregate (DESIGN §2 step 7): decrypt
 * the summed ciphertexts, unpack the lanes (refusing overflow), dequantize, form FedAvg's mean
 * Δ̄ = sum · N / (m · W) (the sum holds Σ_k n_k·Δ_k · m/N), and apply the server strategy to
 * `model` and `state`; `context` names the round, whose tag the integrity lanes must show, and
 * `participants` its RoundOpen's assignments in order, whose presence lanes they must show. The same function serves PREPARE (a candidate to vote on) and catch-up
 * (a commit to replay), so a replayed model is bit-identical to the voted one.
 *
 * @throws when the site has no CKKS key, the numbers cannot average, or the aggregate does not decode.
 */
export function applyAggregate(
  core: AgentCore,
  model: Float32Array,
  state: StrategyState | null,
  info: AggregateInfo,
  ciphertexts: readonly Uint8Array[],
  context: { readonly federation: string; readonly round: number },
  participants: readonly string[],
): AppliedRound {
  if (core.keyset === null) throw new InvalidArgumentError(`cannot decrypt: ${core.keysetError}`);
  if (info.totalParams !== model.length) {
    throw new InvalidArgumentError(`aggregate has ${info.totalParams} parameters, the model ${model.length}`);
  }
  if (info.contributors.length === 0) throw new InvalidArgumentError('aggregate has no contributors');
  const minimum = core.ctx.config.round.minContributors;
  if (info.contributors.length < minimum) {
    // Never decrypted, whoever proposes it: with one or two sites the sum shows their updates.
    throw new InvalidArgumentError(
      `aggregate of ${info.contributors.length} site(s), round.minContributors is ${minimum}: not decrypted`,
    );
  }
  const { participants: m, totalExamples: N, totalWeight: W } = info;
  if (!(m >= 1 && N > 0 && W > 0 && Number.isFinite(N) && Number.isFinite(W))) {
    throw new InvalidArgumentError(
      `cannot average with participants ${m}, totalExamples ${N}, totalWeight ${W}`,
    );
  }
  const decoded = decodeAggregate(
    core.keyset,
    {
      encoding: info.encoding,
      totalParams: info.totalParams,
      sites: info.contributors,
      contributors: info.contributors.length,
      totalWeight: W,
      ciphertexts,
    },
    context,
    participants,
  );
  const meanDelta = meanFromSum(decoded.sum, (m * W) / N);
  const next = core.strategy.apply(model, meanDelta, state);
  return { parameters: next.parameters, strategyState: next.state };
}
