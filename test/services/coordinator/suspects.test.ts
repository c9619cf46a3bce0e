// The group testing that names a site writing wrong tags: hand-worked rounds with one culprit.
import { describe, expect, it } from 'vitest';
import { SUSPICION_ROUNDS, SuspectSet } from '../../../src/services/coordinator/suspects.ts';

const SITES = Array.from({ length: 8 }, (_, i) => `site-${i + 1}`);

describe('SuspectSet', () => {
  it('without suspicion every eligible site takes part', () => {
    expect(new SuspectSet().cohort(SITES, 1, 3)).toEqual(SITES);
  });

  it('halves the suspects each time the culprit spoils a round, and names it once it is alone', () => {
    const culprit = 'site-6';
    const s = new SuspectSet();
    // Round 1: everyone took part; the culprit spoiled it.
    expect(s.fault(1, SITES)).toBeUndefined();
    expect(s.suspects).toEqual(SITES);
    let spoiled = 1;
    let named: string | undefined;
    for (let round = 2; named === undefined && round < 40; round++) {
      const cohort = s.cohort(SITES, round, 3);
      // Every non-suspect takes part; of the suspects, about half.
      const suspects = s.suspects;
      expect(SITES.filter((x) => !suspects.includes(x)).every((x) => cohort.includes(x))).toBe(true);
      const taking = cohort.filter((x) => suspects.includes(x)).length;
      expect(taking).toBe(Math.max(Math.ceil(suspects.length / 2), 3 - (SITES.length - suspects.length)));
      // The culprit spoils every round it is in; the others commit.
      if (cohort.includes(culprit)) {
        spoiled++;
        named = s.fault(round, cohort);
      }
    }
    expect(named).toBe(culprit);
    // ⌈log₂ 8⌉ + 1 = 4 spoiled rounds at most.
    expect(spoiled).toBeLessThanOrEqual(4);
    // Named, it stays the only suspect: it takes part, and the next round it spoils names it again.
    expect(s.suspects).toEqual([culprit]);
    expect(s.cohort(SITES, 50, 3)).toEqual(SITES);
    expect(s.fault(50, SITES)).toBe(culprit);
  });

  it('keeps enough sites for round.minContributors, adding suspects', () => {
    const s = new SuspectSet();
    s.fault(1, ['site-1', 'site-2', 'site-3', 'site-4']);
    // Only the four suspects are eligible: half would be 2, the minimum is 3.
    expect(s.cohort(['site-1', 'site-2', 'site-3', 'site-4'], 2, 3)).toHaveLength(3);
  });

  it('starts over when the faults share no site, and forgets after quiet rounds', () => {
    const s = new SuspectSet();
    s.fault(1, ['site-1', 'site-2']);
    expect(s.fault(2, ['site-3', 'site-4'])).toBeUndefined();
    expect(s.suspects).toEqual(['site-3', 'site-4']);
    expect(s.cohort(SITES, 2 + SUSPICION_ROUNDS, 3)).toHaveLength(7);
    expect(s.cohort(SITES, 3 + SUSPICION_ROUNDS, 3)).toEqual(SITES);
    expect(s.suspects).toEqual([]);
  });

  it('is deterministic: the same round picks the same half', () => {
    const a = new SuspectSet();
    const b = new SuspectSet();
    a.fault(1, SITES);
    b.fault(1, SITES);
    expect(a.cohort(SITES, 7, 3)).toEqual(b.cohort(SITES, 7, 3));
  });
});
