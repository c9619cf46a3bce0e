import type { ControlBodies } from '../../protocol/index.ts';
import { bytesToHex, type PreparedCandidate, rollbackCommit } from '../../versions/index.ts';
import type { AgentCore } from './agent-core.ts';
import { materialize } from './catch-up.ts';
import { VoteNo } from './voter-error.ts';

/**
 * The candidate of a rollback (docs/round-protocol.md, "Rollback"): the target must be a commit
 * of the log's chain below the head (the log is read again when the target is not known yet); the
 * candidate is its model (from the store, or rebuilt) with a fresh strategy state. Throws
 * {@link VoteNo}.
 */
async function rollbackCandidate(core: AgentCore, p: ControlBodies['prepare']): Promise<PreparedCandidate> {
  const head = core.store.head()!;
  const target =
    core.follower.history.commitByHash(p.rollbackTarget) ??
    (await core.follower.sync().then(() => core.follower.history.commitByHash(p.rollbackTarget)));
  if (target === undefined)
    throw new VoteNo(
      `rollback target ${bytesToHex(p.rollbackTarget).slice(0, 12)} is not on the log's chain`,
    );
  if (!(target.commit.height < head.height)) throw new VoteNo('rollback target is not below my head');
  const parameters = await materialize(core, target);
  const commit = rollbackCommit(head, target.commit, p.round, p.params);
  return { commit, parameters, strategyState: core.strategy.initialState(parameters.length) };
}

/** A rollback round, as a site takes part in it: nobody contributes, every site votes. */
export const rollbackSitePlan = {
  refusal: () => 'a rollback round takes no updates',
  contribute: async () => {},
  candidate: rollbackCandidate,
};
