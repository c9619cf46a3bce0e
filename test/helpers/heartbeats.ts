// Plays a member by heartbeats alone: live to the coordinator, but it never trains or aggregates.
import { type ControlBodies, sealControl } from '../../src/protocol/index.ts';
import type { MemberContext } from '../../src/services/index.ts';

/**
 * Publishes `m`'s signed heartbeat now and every `everyMs` (default 100), reporting the head
 * `at()` gives; returns the timer for `clearInterval`.
 */
export function startHeartbeats(
  m: MemberContext,
  role: 'site' | 'aggregator',
  at: () => { readonly head: Uint8Array; readonly height: number },
  everyMs = 100,
): NodeJS.Timeout {
  const beat = () => {
    const { head, height } = at();
    const body: ControlBodies['heartbeat'] = {
      federation: m.config.federation.id,
      member: m.member,
      role,
      sentUnixMs: Date.now(),
      head,
      height,
      examples: role === 'site' ? 50 : 0,
      state: 'IDLE',
    };
    m.transport
      .publish(m.subjects.heartbeat(m.member), sealControl('heartbeat', body, m.member, m.signing))
      .catch(() => undefined);
  };
  beat();
  return setInterval(beat, everyMs);
}
