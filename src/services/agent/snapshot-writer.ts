import type { DecisionBody } from '../../protocol/index.ts';
import { type Commit, encodeSnapshot } from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import { snapshotEpochOf, snapshotWriter } from '../federation-log/index.ts';
import type { AgentCore } from './agent-core.ts';
import { dataKeyAt } from './epoch-keys.ts';

/**
 * Writes the snapshot of `head` (committed by the log entry `logSequence`) when this site is its
 * writer: model and strategy state encrypted under the federation data key, signed by the site,
 * handed to the coordinator, which stores it and logs it (under threshold keys, the data key of the
 * commit's key epoch). Failures are logged, never fatal: a
 * later snapshot or replay from an earlier one serves joiners meanwhile. Failpoint
 * `agent.snapshot-offer` (round: the commit's) with `skip`: a writer that never hands in its
 * snapshot (the adversarial suite's hostile writer hands in its own instead).
 */
export async function maybeWriteSnapshot(
  core: AgentCore,
  decision: DecisionBody,
  head: Commit,
  logSequence: number,
): Promise<void> {
  const every = core.ctx.config.history.snapshotEvery;
  const epoch = snapshotEpochOf(core.follower.history, head.height);
  if (snapshotWriter(decision, head.height, every, epoch) !== core.member) return;
  // Under the data key of the commit's key epoch (docs/threshold-ckks.md, "Re-sharing").
  const dataKey = dataKeyAt(core, head.round);
  if (dataKey === null) return;
  if (failpoint('agent.snapshot-offer', head.round) === 'skip') return;
  try {
    const parameters = core.store.readModel(head);
    const bytes = encodeSnapshot({
      federation: core.ctx.config.federation.id,
      commit: head,
      logSequence,
      parameters,
      strategyState: core.store.loadStrategyState() ?? core.strategy.initialState(parameters.length),
      dataKey,
      signer: core.member,
      signing: core.ctx.signing,
    });
    await core.ctx.transport.request(core.ctx.subjects.snapshot(core.member), bytes, {
      timeoutMs: Math.max(core.ctx.config.nats.timeoutMs, 30_000),
    });
    core.counters.snapshotsWritten++;
    core.ctx.log.info({ height: head.height, bytes: bytes.length }, 'snapshot written');
  } catch (err) {
    core.ctx.log.error({ height: head.height, err }, 'snapshot not written');
  }
}
