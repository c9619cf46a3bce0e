import type { ControlBodies } from '../../protocol/index.ts';
import { encodeUpdate, featureTotals, statisticsLaneCount, statisticsLevels } from '../../protocol/index.ts';
import { contractFeatureCount, federatedStandardization } from '../statistics-plan.ts';
import type { AgentCore } from './agent-core.ts';
import { pinnedExamples, updateFraming, uploadUpdate } from './update-upload.ts';

/** Why this site cannot take part in the statistics round `open` announced, or undefined. */
export function statisticsProblem(core: AgentCore, open: ControlBodies['round-open']): string | undefined {
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
export async function sendStatistics(
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
