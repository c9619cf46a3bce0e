import { describe, expect, it } from 'vitest';
import type { RoundSummary } from '../../../src/services/coordinator/events.ts';
import { RECENT_ROUND_SUMMARIES, RecentRounds } from '../../../src/services/coordinator/recent-rounds.ts';

const summary = (round: number, commit: boolean) => ({ round, commit }) as RoundSummary;

describe('RecentRounds', () => {
  it('counts every round and keeps the summaries of the newest ones', () => {
    const r = new RecentRounds();
    expect([r.decided, r.committed, r.aborted, r.lastCommit, r.recent()]).toEqual([0, 0, 0, undefined, []]);
    const total = 3 * RECENT_ROUND_SUMMARIES + 7;
    for (let i = 1; i <= total; i++) r.push(summary(i, i % 3 !== 0)); // every third round aborts
    expect(r.decided).toBe(total);
    expect(r.aborted).toBe(Math.floor(total / 3));
    expect(r.committed).toBe(total - Math.floor(total / 3));
    const recent = r.recent().map((s) => s.round);
    expect(recent).toHaveLength(RECENT_ROUND_SUMMARIES);
    expect(recent[0]).toBe(total - RECENT_ROUND_SUMMARIES + 1);
    expect(recent.at(-1)).toBe(total);
    expect(r.lastCommit?.round).toBe(total % 3 === 0 ? total - 1 : total);
  });
});
