import type { RoundSummary } from './events.ts';
import { abortOpenRound } from './round-decision.ts';
import type { RoundHost } from './round-host.ts';

/** State the last decision recorded: exclusions, the clip, and the last commit's switch record. */
export function restoreFromLog(host: RoundHost): void {
  const history = host.log.history;
  const last = history.lastDecision?.record.decision;
  if (last) {
    host.membership.adopt(last.exclusions);
    if (Number.isFinite(last.nextClip) && last.nextClip > 0) host.clip = last.nextClip;
  }
  const head = history.head;
  if (head.decision !== null) {
    host.switches.track(
      head.commit.round,
      { hash: head.commit.hash, height: head.commit.height },
      head.decision.voters,
      head.unixMs,
      false,
    );
  }
}

/**
 * A previous run may have died mid-round. A round it opened and never decided is aborted now
 * (its number is never reused, and prepared sites discard at once instead of waiting for a
 * deadline): its summary is returned. Otherwise its last decision is announced again for sites
 * that missed it.
 */
export async function finishPreviousRun(host: RoundHost): Promise<RoundSummary | undefined> {
  const history = host.log.history;
  const open = history.openRound;
  if (open !== null) {
    const round = open.roundOpen.round;
    const summary = await abortOpenRound(
      host,
      round,
      open.roundOpen.attempt,
      `the coordinator restarted before deciding round ${round}`,
    );
    host.emit({ type: 'recovered', action: 'aborted-open-round', round });
    return summary;
  }
  const last = history.lastDecision;
  if (last !== null) {
    try {
      await host.ctx.transport.publish(host.ctx.subjects.decision, last.bytes);
    } catch (err) {
      host.ctx.log.error({ err }, 'last decision not re-announced');
    }
    host.emit({ type: 'recovered', action: 'reannounced', round: last.record.decision!.round });
  }
  return undefined;
}
