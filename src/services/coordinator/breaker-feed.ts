// What the coordinator tells its circuit breaker and what it says of the breaker's moves: the
// decided rounds it feeds in (with the sites that are gone) and the log line and event of each
// level change.
import type { MemberContext } from '../member-context.ts';
import {
  BREAKER_LEVELS,
  type BreakerTransition,
  type CircuitBreaker,
  type RoundOutcome,
} from './circuit-breaker.ts';
import type { CoordinatorEvent } from './events.ts';
import type { Membership } from './membership.ts';

/** What {@link feedBreaker} and {@link reportBreakerChange} use of the coordinator. */
export interface BreakerHost {
  readonly ctx: MemberContext;
  readonly membership: Membership;
  readonly breaker: CircuitBreaker;
  now(): number;
  emit(event: CoordinatorEvent): void;
}

/** Logs a level change (a warning upward, info downward) and emits it as a `breaker` event. */
export function reportBreakerChange(host: BreakerHost, change: BreakerTransition | undefined): void {
  if (change === undefined) return;
  const from = BREAKER_LEVELS[change.from];
  const to = BREAKER_LEVELS[change.to];
  const fields = { from, to, reason: change.reason, share: change.share, round: change.round };
  if (change.to > change.from) host.ctx.log.warn(fields, 'breaker level changed');
  else host.ctx.log.info(fields, 'breaker level changed');
  host.emit({ type: 'breaker', ...fields });
}

/**
 * Feeds a decided round to the breaker, adding the sites that are gone: configured, seen by this
 * coordinator, not live now and not revoked (a site never seen since the start is not counted,
 * so a federation that runs without some configured sites is not held against them).
 */
export function feedBreaker(host: BreakerHost, outcome: RoundOutcome): void {
  if (outcome.expected.length === 0) return; // no evidence (a restart's abort)
  const { ctx, membership, breaker } = host;
  const expected = new Set(outcome.expected);
  const gone = ctx.members.sites
    .map((s) => s.id)
    .filter(
      (id) =>
        !expected.has(id) &&
        membership.view(id) !== undefined &&
        !membership.isLive(id) &&
        !ctx.registryView.isRevoked(id),
    );
  const probing = breaker.probing;
  const change = breaker.observe(
    {
      round: outcome.round,
      expected: [...expected, ...gone],
      failing: [...outcome.failing, ...gone],
      committed: outcome.committed,
    },
    host.now(),
  );
  reportBreakerChange(host, change);
  if (probing && breaker.level === 3) {
    const state = breaker.state();
    ctx.log.warn(
      { round: outcome.round, share: state.share, probeAtMs: state.probeAtMs },
      'breaker probe round failed: training stays frozen',
    );
  }
}
