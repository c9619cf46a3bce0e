import type { LaneKeyset } from '../../../crypto/lanes/index.ts';
import { meanFromSum, type StrategyState } from '../../../federation/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  type AggregateInfo,
  type DecodedAggregate,
  decodeAggregateYielding,
  decodeEvaluation,
  type Evaluation,
  medianRmsOf,
  type RoundMac,
} from '../../protocol/index.ts';
import { updatePlan } from '../evaluation-plan.ts';
import type { ServicePrivacy } from '../privacy-plan.ts';
import type { AgentCore } from './agent-core.ts';
import { decryptProblem } from './aggregate-shares.ts';
import { macKeyAt } from './epoch-keys.ts';
import { privateMean } from './private-update.ts';

/** The next model and strategy state. */
export interface AppliedRound {
  readonly parameters: Float32Array;
  readonly strategyState: StrategyState;
  /**
   * The participants' evaluation totals of the base model, when the round carried evaluation lanes
   * (null without, or when they do not add up to anyone's figures).
   */
  readonly evaluation: Evaluation | null;
  /**
   * The contributors' median update RMS from the aggregate's histogram lanes (`medianRmsOf`): what
   * a YES vote reports for the next clip, the same at every site. Null when the histogram is not
   * the contributors' (a contribution wrote other lanes, or no site sent its bucket: privacy).
   */
  readonly medianRms: number | null;
}

/**
 * The deterministic step every site takes from a round's aggregate (round step 7,
 * docs/round-protocol.md): decrypt the summed ciphertexts, unpack the lanes (refusing overflow),
 * dequantize, form FedAvg's mean Δ̄ = sum · N / (m · W) (the sum holds Σ_k n_k·Δ_k · m/N), and
 * apply the server strategy to `model` and `state`; `context` names the round and its opening
 * attempt, to which the aggregate's MAC is bound (it must be the exact sum of its listed
 * contributions: `MAC_MISMATCH`), with `decryptor` (the site's keyset under a shared key, the
 * shares' decryptor under threshold keys: `aggregateDecryptor`); `robustDelta` the Δ̄ of a robust `plain`-mode round
 * (`robustDeltaFor`), applied instead of the sum's mean. The same function serves PREPARE (a
 * candidate to vote on) and catch-up (a commit to replay), so a replayed model is bit-identical to
 * the voted one.
 *
 * @throws when the site has no CKKS key, the numbers cannot average, or the aggregate does not decode.
 */
export async function applyAggregate(
  core: AgentCore,
  model: Float32Array,
  state: StrategyState | null,
  info: AggregateInfo,
  ciphertexts: readonly Uint8Array[],
  context: RoundAttempt,
  robustDelta: Float32Array | null = null,
  decryptor: LaneKeyset | null = core.keyset,
): Promise<AppliedRound> {
  assertDecryptable(core, info, context.round);
  const plan = updatePlan(core.ctx.config, core.spec, info.encoding.bits);
  if (info.totalParams !== plan.requiredLanes && info.totalParams !== plan.totalParams) {
    throw new InvalidArgumentError(
      `aggregate has ${info.totalParams} lanes, the model ${plan.requiredLanes} lanes of parameters and RMS histogram` +
        (plan.evaluationLanes > 0 ? ` and ${plan.evaluationLanes} evaluation lanes` : ''),
    );
  }
  const { participants: m, totalExamples: N, totalWeight: W } = info;
  if (!(m >= 1 && N > 0 && W > 0 && Number.isFinite(N) && Number.isFinite(W))) {
    throw new InvalidArgumentError(
      `cannot average with participants ${m}, totalExamples ${N}, totalWeight ${W}`,
    );
  }
  const decoded = await decryptAggregate(core, info, ciphertexts, context, decryptor);
  if (decoded.clamped > 0) {
    core.ctx.log.warn(
      { round: context.round, clamped: decoded.clamped, contributors: decoded.contributors },
      'aggregate holds values no honest site sends: clamped to the honest range (a contribution out of range)',
    );
  }
  // Private levels average over the contributors: every site weighs 1 (docs/privacy.md).
  // A robust round applies the coordinator's Δ̄ (checked against the commit's record by the caller);
  // the sum still proves the contributors and carries the evaluation lanes.
  const meanDelta =
    robustDelta !== null
      ? robustDelta
      : plan.privacy === null
        ? meanFromSum(decoded.sum.subarray(0, model.length), (m * W) / N)
        : privateDelta(core, context.round, plan.privacy, decoded, plan.modelLanes, info.encoding.bits);
  if (meanDelta.length !== model.length) {
    throw new InvalidArgumentError(
      `aggregate update has ${meanDelta.length} values, the model ${model.length}`,
    );
  }
  const next = core.strategy.apply(model, meanDelta, state);
  const evaluation =
    info.totalParams > plan.requiredLanes && plan.classes !== null
      ? decodeEvaluation(decoded.laneSums.subarray(plan.requiredLanes), plan.classes, info.encoding.bits)
      : null;
  const medianRms = medianRmsOf(
    decoded.laneSums.subarray(plan.modelLanes, plan.requiredLanes),
    info.encoding.clip,
    decoded.contributors,
  );
  return { parameters: next.parameters, strategyState: next.state, evaluation, medianRms };
}

/** The round and opening attempt an aggregate belongs to (PREPARE's, or a decision's fields). */
export interface RoundAttempt {
  readonly federation: string;
  readonly round: number;
  readonly attempt: Uint8Array;
}

/** The round's aggregate MAC at this site: its key, bound to `round`'s federation, number and attempt. */
export function roundMacOf(core: AgentCore, round: RoundAttempt): RoundMac {
  const key = macKeyAt(core, round.round);
  if (key === null) {
    throw new InvalidArgumentError(
      `no aggregate MAC key for round ${round.round}: ${core.keysetError ?? 'this site holds no data key of its key epoch'}`,
    );
  }
  return {
    key,
    nonce: { federation: round.federation, round: round.round, attempt: round.attempt },
  };
}

/**
 * Decrypts and decodes a round's aggregate (MAC checked, lanes unpacked), refusing one
 * of no contributor or of fewer than `round.minContributors` sites: such a sum is never decrypted,
 * whoever proposes it. Shared by training rounds ({@link applyAggregate}) and statistics rounds.
 */
export async function decryptAggregate(
  core: AgentCore,
  info: AggregateInfo,
  ciphertexts: readonly Uint8Array[],
  context: RoundAttempt,
  decryptor: LaneKeyset | null = core.keyset,
): Promise<DecodedAggregate> {
  assertDecryptable(core, info, context.round);
  if (decryptor === null) throw new InvalidArgumentError(`cannot decrypt: ${core.keysetError}`);
  // Yielding: a large aggregate takes seconds to decrypt, and the site keeps heartbeating meanwhile.
  return decodeAggregateYielding(
    decryptor,
    {
      encoding: info.encoding,
      totalParams: info.totalParams,
      sites: info.contributors,
      contributors: info.contributors.length,
      totalWeight: info.totalWeight,
      ciphertexts,
    },
    roundMacOf(core, context),
    core.options.cryptoTimings,
  );
}

function assertDecryptable(core: AgentCore, info: AggregateInfo, round: number): void {
  const problem = decryptProblem(core, round);
  if (problem !== undefined) throw new InvalidArgumentError(`cannot decrypt: ${problem}`);
  if (info.contributors.length === 0) throw new InvalidArgumentError('aggregate has no contributors');
  const minimum = core.ctx.config.round.minContributors;
  if (info.contributors.length < minimum) {
    // With one or two sites the sum shows their updates.
    throw new InvalidArgumentError(
      `aggregate of ${info.contributors.length} site(s), round.minContributors is ${minimum}: not decrypted`,
    );
  }
}

/** The private mean of a decoded aggregate, logging the parameters clamped to the honest range. */
function privateDelta(
  core: AgentCore,
  round: number,
  privacy: ServicePrivacy,
  decoded: DecodedAggregate,
  modelLanes: number,
  bits: number,
): Float32Array {
  const { mean, clamped } = privateMean(
    privacy,
    decoded.laneSums.subarray(0, modelLanes),
    bits,
    decoded.contributors,
  );
  if (clamped > 0) {
    core.ctx.log.warn(
      { round, clamped, contributors: decoded.contributors },
      'private sum outside what honest sites can send: clamped (a contribution out of range)',
    );
  }
  return mean;
}
