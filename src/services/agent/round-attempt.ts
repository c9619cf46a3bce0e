import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { AgentCore } from './agent-core.ts';
import { readUnavailable, retryUnavailable } from './read-retry.ts';

/** Why a message of a round attempt is refused (see {@link replayProblem}). */
export interface ReplayRefusal {
  readonly reason: string;
  /**
   * The log could not be read to check it (after `nats.maxRetry` tries): nothing says it is a
   * replay, and a voter abstains instead of objecting.
   */
  readonly unavailable: boolean;
}

/**
 * Why a RoundOpen or PREPARE must be refused as a replay, or `undefined` when it belongs to the
 * round the log has open, with that opening's attempt id. The coordinator appends every RoundOpen
 * to the log before announcing it, so a message of the live attempt is in the log by the time it
 * arrives; one of a decided round (an aborted attempt replayed on the same base) or of another
 * attempt is not. The log is read again only when the view in memory does not show the round open;
 * a read that times out is tried again (`nats.maxRetry` times, backing off) before it is reported
 * as `unavailable`.
 */
export async function replayProblem(
  core: AgentCore,
  what: 'round-open' | 'prepare' | 'share-request',
  round: number,
  attempt: Uint8Array,
): Promise<ReplayRefusal | undefined> {
  const history = () => core.follower.history;
  const live = () => {
    const open = history().openRound?.roundOpen;
    return open !== undefined && open.round === round && bytesEqual(open.attempt, attempt);
  };
  if (history().decisionOf(round) === undefined && live()) return undefined;
  try {
    await retryUnavailable(core, () => core.follower.sync());
  } catch (err) {
    return {
      reason: `${what} of round ${round} cannot be checked against the log: ${(err as Error).message}`,
      unavailable: readUnavailable(err),
    };
  }
  if (history().decisionOf(round) !== undefined) {
    return { reason: `${what} of round ${round}, which the log has decided: a replay`, unavailable: false };
  }
  if (!live()) {
    return {
      reason: `${what} of round ${round} is not the attempt the log has open: a replay`,
      unavailable: false,
    };
  }
  return undefined;
}
