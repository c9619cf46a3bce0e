import { describe, expect, it } from 'vitest';
import { VersionDriftTracker } from '../../src/metrics/index.ts';

const everyone = () => true;

describe('VersionDriftTracker', () => {
  it('counts live YES voters not switched once the switch wait is over', () => {
    const t = new VersionDriftTracker(2_000);
    for (const s of ['a', 'b', 'c']) t.vote(3, s, true);
    t.vote(3, 'd', false);
    t.decided(3, true, 10_000, everyone);
    expect(t.switched(3, 'a')).toBe(true);
    const live = (s: string) => s !== 'c';
    // b and c have not switched, but the wait is not over: no drift yet
    expect(t.drift(11_999, live)).toBe(0);
    expect(t.missedTotal).toBe(0);
    // over: b is live and not switched (c is not live, d voted NO)
    expect(t.drift(12_000, live)).toBe(1);
    expect(t.missedTotal).toBe(1);
    // b switches late: no drift now, but it did miss the wait
    expect(t.switched(3, 'b')).toBe(true);
    expect(t.drift(13_000, live)).toBe(0);
    expect(t.missedTotal).toBe(1);
  });

  it('takes a switched that arrives before the decision event', () => {
    const t = new VersionDriftTracker(1_000);
    t.vote(5, 'a', true);
    t.vote(5, 'b', true);
    expect(t.switched(5, 'a')).toBe(true);
    t.decided(5, true, 0, everyone);
    expect(t.drift(1_000, everyone)).toBe(1);
    expect(t.switched(5, 'a')).toBe(false);
    t.switched(5, 'b');
    expect(t.drift(1_000, everyone)).toBe(0);
  });

  it('tells a first switched from a repeat', () => {
    const t = new VersionDriftTracker(0);
    expect(t.switched(1, 'a')).toBe(true);
    expect(t.switched(1, 'a')).toBe(false);
    expect(t.switched(2, 'a')).toBe(true);
  });

  it('ignores an ABORT and settles the previous commit at the next one', () => {
    const t = new VersionDriftTracker(5_000);
    t.vote(1, 'a', true);
    t.vote(1, 'b', true);
    t.decided(1, true, 0, everyone);
    t.vote(2, 'a', true);
    t.decided(2, false, 1_000, everyone);
    expect(t.drift(2_000, everyone)).toBe(0);
    t.switched(1, 'a');
    t.vote(3, 'a', true);
    t.decided(3, true, 3_000, everyone);
    // commit 1 settled at commit 3 with b not switched
    expect(t.missedTotal).toBe(1);
    expect(t.drift(3_000, everyone)).toBe(1);
    t.switched(3, 'a');
    expect(t.drift(8_000, everyone)).toBe(0);
    expect(t.missedTotal).toBe(1);
  });

  it('refuses a negative switch wait', () => {
    expect(() => new VersionDriftTracker(-1)).toThrow(/switchWaitMs/);
  });
});
