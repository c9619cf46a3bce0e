// Weight caps relative to the round's median: hand-computed cases.
import { describe, expect, it } from 'vitest';
import { cappedWeights } from '../../../src/services/coordinator/weight-cap.ts';

describe('cappedWeights', () => {
  it('caps one site claiming 10^7 beside four of 10^4 at factor × the median', () => {
    const reported = new Map([
      ['site-1', 10_000],
      ['site-2', 10_000],
      ['site-3', 10_000],
      ['site-4', 10_000],
      ['site-5', 10_000_000],
    ]);
    const w = cappedWeights(reported, 4);
    // Median 10,000: the claim is capped at 40,000; the others keep theirs.
    expect(Object.fromEntries(w)).toEqual({
      'site-1': 10_000,
      'site-2': 10_000,
      'site-3': 10_000,
      'site-4': 10_000,
      'site-5': 40_000,
    });
    // Its share: 40,000 / 80,000 = 1/2, within factor / (factor + ⌈5/2⌉ − 1) = 4/6 — not 99.6%.
    const total = [...w.values()].reduce((a, b) => a + b, 0);
    expect(w.get('site-5')! / total).toBe(0.5);
    expect(w.get('site-5')! / total).toBeLessThanOrEqual(4 / (4 + Math.ceil(5 / 2) - 1));
  });

  it('leaves honest heterogeneity within the factor alone; even counts use the lower middle', () => {
    const w = cappedWeights(
      new Map([
        ['a', 100],
        ['b', 300],
        ['c', 500],
        ['d', 700],
      ]),
      3,
    );
    // Lower median 300, cap 900: nothing is cut; at factor 2 (cap 600) the largest is.
    expect([...w.values()]).toEqual([100, 300, 500, 700]);
    expect([...cappedWeights(new Map(w), 2).values()]).toEqual([100, 300, 500, 600]);
    expect(cappedWeights(new Map([['a', 1000]]), 1).get('a')).toBe(1000);
  });

  it('a hostile majority can move the median: the bound is for fewer than half the sites', () => {
    const w = cappedWeights(
      new Map([
        ['a', 10],
        ['b', 10],
        ['c', 1e6],
        ['d', 1e6],
        ['e', 1e6],
      ]),
      4,
    );
    expect(w.get('c')).toBe(1e6);
  });

  it('a round of two sites: the claim is capped at factor × the lower of the two (CI failure)', () => {
    // A round that opened with two eligible sites (the others still switching) pinned the hostile
    // site's 9,999,999 in full: the mean of the middle two was half the claim.
    const w = cappedWeights(
      new Map([
        ['site-1', 800],
        ['site-5', 9_999_999],
      ]),
      4,
    );
    expect(w.get('site-5')).toBe(3200);
    expect(w.get('site-1')).toBe(800);
  });

  it('refuses a factor below 1 and counts that are not finite', () => {
    expect(() => cappedWeights(new Map([['a', 1]]), 0.5)).toThrow(/factor/);
    expect(() => cappedWeights(new Map([['a', Number.NaN]]), 2)).toThrow(/example count/);
  });
});
