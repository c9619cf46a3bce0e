import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { AgentCore } from './agent-core.ts';

/**
 * Why a RoundOpen or PREPARE must be refused as a replay, or `undefined` when it belongs to the
 * round the log has open, with that opening's attempt id. The coordinator appends every RoundOpen
 * to the log before announcing it, so a message of the live attempt is in the log by the time it
 * arrives; one of a decided round (an aborted attempt replayed on the same base) or of another
 * attempt is not. The log is read again only when the view in memory does not show the round open.
 */
export async function replayProblem(
  core: AgentCore,
  what: 'round-open' | 'prepare' | 'share-request',
  round: number,
  attempt: Uint8Array,
): Promise<string | undefined> {
  const history = () => core.follower.history;
  const live = () => {
    const open = history().openRound?.roundOpen;
    return open !== undefined && open.round === round && bytesEqual(open.attempt, attempt);
  };
  if (history().decisionOf(round) === undefined && live()) return undefined;
  try {
    await core.follower.sync();
  } catch (err) {
    return `${what} of round ${round} cannot be checked against the log: ${(err as Error).message}`;
  }
  if (history().decisionOf(round) !== undefined) {
    return `${what} of round ${round}, which the log has decided: a replay`;
  }
  if (!live()) return `${what} of round ${round} is not the attempt the log has open: a replay`;
  return undefined;
}
