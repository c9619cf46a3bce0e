import type { ControlBodies } from '../../protocol/index.ts';
import { decodeRoundParams, type RoundPrivacy } from '../../round/index.ts';
import { modelHash, type PreparedCandidate, roundCommit } from '../../versions/index.ts';
import { updatePlan } from '../evaluation-plan.ts';
import type { AgentCore } from './agent-core.ts';
import { aggregateDecryptor } from './aggregate-shares.ts';
import { applyAggregate } from './apply-aggregate.ts';
import { preparedAggregate } from './prepared-aggregate.ts';
import { checkPrivacyRecord } from './privacy-record.ts';
import { robustDeltaFor } from './robust-record.ts';
import { siteRows } from './site-rows.ts';
import { trainAndSend } from './train-and-send.ts';
import { VoteNo } from './voter-error.ts';

/**
 * Why this site cannot train for the training round `open` (beyond what every round checks), or
 * undefined: it has no feature statistics yet when the federation standardizes with them, or the
 * RoundOpen's lanes are not its model's (with the evaluation lanes, or without them once the
 * coordinator's circuit breaker dropped optional work).
 */
function trainingRefusal(core: AgentCore, open: ControlBodies['round-open']): string | undefined {
  if (siteRows(core, core.store.head()!.height) === null)
    return 'the federation has no feature statistics yet';
  const plan = updatePlan(core.ctx.config, core.spec, open.bits);
  if (open.totalParams !== plan.totalParams && open.totalParams !== plan.requiredLanes) {
    return (
      `RoundOpen pins ${open.totalParams} lanes, the model has ${plan.requiredLanes} lanes of parameters and RMS histogram` +
      (plan.evaluationLanes > 0 ? ` and ${plan.evaluationLanes} evaluation lanes` : '')
    );
  }
  return undefined;
}

/**
 * The candidate of a training round: the aggregate, received and checked
 * ({@link preparedAggregate}), decrypted and applied to the head's model by the federation's
 * strategy (with the robust rule's Δ̄ when the params record one; the privacy record checked
 * against this site's own count); the commit names the new model's hash. Throws {@link VoteNo}.
 */
async function trainingCandidate(core: AgentCore, p: ControlBodies['prepare']): Promise<PreparedCandidate> {
  const head = core.store.head()!;
  const { info, ciphertexts } = await preparedAggregate(core, p);
  const w = core.store.readModel(head);
  checkPrivacyRecord(core, head, p, () => paramsPrivacy(p.params));
  const robust = await robustDeltaFor(
    core,
    {
      params: p.params,
      round: p.round,
      contributors: p.contributors.map((c) => c.site),
      parameters: w.length,
    },
    'vote-no',
  );
  const decryptor = await aggregateDecryptor(core, info, ciphertexts, p, 'vote-no');
  let next: Awaited<ReturnType<typeof applyAggregate>>;
  try {
    next = await applyAggregate(
      core,
      w,
      core.store.loadStrategyState(),
      info,
      ciphertexts,
      p,
      robust,
      decryptor.keyset,
    );
  } finally {
    if (decryptor.owned) decryptor.keyset.delete();
  }
  const commit = roundCommit(head, {
    round: p.round,
    aggregateDigest: p.aggregateDigest,
    modelHash: modelHash(next.parameters),
    params: p.params,
  });
  // The contributors' median RMS (from the aggregate, never this site's own) goes with the YES vote.
  core.preparedRms = next.medianRms === null ? null : { round: p.round, rms: next.medianRms };
  // The totals of the base model's evaluation go with the YES vote (the coordinator records them).
  core.evaluation.prepared =
    next.evaluation === null ? null : { round: p.round, totals: { ...next.evaluation, model: head.hash } };
  if (next.evaluation !== null && next.evaluation.examples > 0) {
    const e = next.evaluation;
    core.ctx.log.info(
      {
        round: p.round,
        examples: e.examples,
        accuracy: e.correct / e.examples,
        loss: e.lossSum / e.examples,
      },
      'federated evaluation of the base model (decrypted totals)',
    );
  }
  return { commit, parameters: next.parameters, strategyState: next.strategyState };
}

/** The privacy record of PREPARE's params (null without one). */
function paramsPrivacy(params: Uint8Array): RoundPrivacy | null {
  try {
    return decodeRoundParams(params).privacy ?? null;
  } catch (err) {
    throw new VoteNo(`PREPARE's round params do not decode: ${(err as Error).message}`);
  }
}

/** A training round (FedAvg and the other strategies, under `he` or `plain`), as a site takes part in it. */
export const trainingSitePlan = {
  refusal: trainingRefusal,
  contribute: trainAndSend,
  candidate: trainingCandidate,
};
