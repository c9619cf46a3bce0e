import { describe, expect, it } from 'vitest';
import { Membership } from '../../src/services/coordinator/index.ts';

const HB = 100;
const WINDOW = 300;

function member(): { m: Membership; beat: (id: string, sentUnixMs: number) => void } {
  let clock = 0;
  const m = new Membership(
    new Map([
      ['site-1', 'site'],
      ['agg-1', 'aggregator'],
    ]),
    WINDOW,
    () => clock,
  );
  const beat = (id: string, sentUnixMs: number) => {
    clock = sentUnixMs;
    m.heartbeat(id, id.startsWith('site') ? 'site' : 'aggregator', {
      examples: 1,
      head: new Uint8Array(32),
      height: 0,
      state: 'READY',
      sentUnixMs,
    });
  };
  return { m, beat };
}

describe('Membership.heartbeatCounts (the heartbeat-loss counters)', () => {
  it('expects one heartbeat per interval of sender stamps and counts the missing ones', () => {
    const { m, beat } = member();
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 0, received: 0 });
    for (const t of [0, 100, 200, 400, 500]) beat('site-1', t); // 300 lost
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 6, received: 5 });
  });

  it('starts a new span after a silence longer than the liveness window', () => {
    const { m, beat } = member();
    for (const t of [0, 100, 200, 400, 500]) beat('site-1', t);
    beat('site-1', 1_500); // gone for 1 s: a rejoin, not 9 lost heartbeats
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 7, received: 6 });
  });

  it('counts an extra heartbeat only up to what is expected, so both counts only grow', () => {
    const { m, beat } = member();
    beat('site-1', 0);
    beat('site-1', 100);
    beat('site-1', 150); // an extra one (a catch-up announced at once): gaps 150 → round(1.5) = 2
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 3, received: 3 });
    beat('site-1', 160); // gaps 160 → 2 intervals + 1: received capped at 3
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 3, received: 3 });
    beat('site-1', 250);
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 4, received: 4 });
  });

  it('sums over members', () => {
    const { m, beat } = member();
    for (const t of [0, 100, 200]) beat('site-1', t);
    for (const t of [0, 200]) beat('agg-1', t);
    expect(m.heartbeatCounts(HB)).toEqual({ expected: 6, received: 5 });
  });

  it('refuses a heartbeat interval that is not a positive integer', () => {
    const { m } = member();
    expect(() => m.heartbeatCounts(0)).toThrow(/heartbeatMs/);
  });
});
