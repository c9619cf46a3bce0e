import {
  type ControlBodies,
  decodeStatistics,
  encodeStatisticsParams,
  encodeUpdate,
  featureTotals,
  statisticsLaneCount,
  statisticsLevels,
} from '../../protocol/index.ts';
import { type PreparedCandidate, statisticsCommit } from '../../versions/index.ts';
import { contractFeatureCount, federatedStandardization } from '../statistics-plan.ts';
import type { AgentCore } from './agent-core.ts';
import { aggregateDecryptor } from './aggregate-shares.ts';
import { decryptAggregate } from './apply-aggregate.ts';
import { preparedAggregate } from './prepared-aggregate.ts';
import { pinnedExamples, updateFraming, uploadUpdate } from './update-upload.ts';
import { VoteNo } from './voter-error.ts';

/** Why this site cannot take part in the statistics round `open` announced, or undefined. */
function statisticsRefusal(core: AgentCore, open: ControlBodies['round-open']): string | undefined {
  const features = contractFeatureCount(core.ctx.config);
  if (!federatedStandardization(core.ctx.config) || features === null) {
    return 'a statistics round, but this federation does not standardize with federated statistics';
  }
  const own = core.trainer === null ? core.shard.featureCount : core.trainer.description?.features;
  if (own !== features) {
    return `the contract names ${features} features, this site's rows have ${own ?? 'an unknown number'}`;
  }
  const lanes = statisticsLaneCount(features, open.bits);
  if (open.totalParams !== lanes)
    return `RoundOpen pins ${open.totalParams} lanes, ${features} features need ${lanes}`;
  return undefined;
}

/**
 * A statistics round (federated standardization): sends the exact fixed-point sums of this site's
 * training rows (rows, Σx, Σx² per feature, after the contract's scale; from its own trainer
 * process when it has one) as lanes of an update with
 * no model part, encrypted and signed like any update; no residual is involved. Only the sum over
 * the round's sites is ever decrypted.
 */
async function sendStatistics(
  core: AgentCore,
  open: ControlBodies['round-open'],
  aggregator: string,
  signal: AbortSignal,
): Promise<void> {
  const log = core.ctx.log.child({ round: open.round });
  const stale = () => signal.aborted || Date.now() >= open.deadlineUnixMs;
  core.machine.transition('TRAINING', `statistics round r${open.round}: summing the rows`);
  try {
    // A site's own trainer sums the rows it trains on; otherwise the agent sums its training rows.
    const totals = core.trainer === null ? featureTotals(core.shard) : await core.trainer.statistics(signal);
    const extraLevels = statisticsLevels(totals, open.bits);
    core.machine.transition('UPLOADING', `statistics of ${core.examples} rows`);
    const encoded = encodeUpdate({
      ...updateFraming(core, open),
      update: new Float32Array(0),
      residual: null,
      exampleWeight: pinnedExamples(core, open),
      extraLevels,
    });
    if (!(await uploadUpdate(core, open, aggregator, encoded, 0, stale))) {
      core.machine.transition('READY', `statistics of round ${open.round} abandoned`);
      return;
    }
    log.info({ aggregator, rows: core.examples, blocks: encoded.blocks.length }, 'feature statistics sent');
    core.machine.transition('READY', `statistics of round ${open.round} acknowledged`);
  } catch (err) {
    log.error({ err }, 'statistics round failed: nothing sent');
    const state = core.machine.state;
    if (state === 'TRAINING' || state === 'UPLOADING')
      core.machine.transition('READY', `round ${open.round} failed`);
  }
}

/**
 * The candidate of a statistics round: the federation's feature sums decrypted from the aggregate
 * (never fewer than `round.minContributors` sites), received and checked like any aggregate
 * ({@link preparedAggregate}), encoded as the commit's params; the model and strategy state stay
 * the head's. Throws {@link VoteNo}.
 */
async function statisticsCandidate(core: AgentCore, p: ControlBodies['prepare']): Promise<PreparedCandidate> {
  const features = contractFeatureCount(core.ctx.config);
  if (features === null || !federatedStandardization(core.ctx.config)) {
    throw new VoteNo(
      'a statistics round, but this federation does not standardize with federated statistics',
    );
  }
  if (p.totalParams !== statisticsLaneCount(features, p.encoding.bits)) {
    throw new VoteNo(
      `statistics of ${p.totalParams} lanes, ${features} features need ${statisticsLaneCount(features, p.encoding.bits)}`,
    );
  }
  const { info, ciphertexts } = await preparedAggregate(core, p);
  const decryptor = await aggregateDecryptor(core, info, ciphertexts, p, 'vote-no');
  let decoded: Awaited<ReturnType<typeof decryptAggregate>>;
  try {
    decoded = await decryptAggregate(core, info, ciphertexts, p, decryptor.keyset);
  } finally {
    if (decryptor.owned) decryptor.keyset.delete();
  }
  const totals = decodeStatistics(decoded.laneSums, features, p.encoding.bits);
  if (totals === null)
    throw new VoteNo('the statistics sums cannot be anyone’s (no rows, or a negative variance)');
  const head = core.store.head()!;
  const w = core.store.readModel(head);
  const commit = statisticsCommit(head, {
    round: p.round,
    aggregateDigest: p.aggregateDigest,
    params: encodeStatisticsParams(totals),
  });
  core.ctx.log.info(
    { round: p.round, rows: Number(totals.rows), features },
    'federated statistics decrypted',
  );
  const strategyState = core.store.loadStrategyState() ?? core.strategy.initialState(w.length);
  return { commit, parameters: w, strategyState };
}

/** A statistics round (federated standardization), as a site takes part in it. */
export const statisticsSitePlan = {
  refusal: statisticsRefusal,
  contribute: sendStatistics,
  candidate: statisticsCandidate,
};
