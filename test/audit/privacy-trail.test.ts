import { describe, expect, it } from 'vitest';
import { planSkellamDp } from '../../federation/privacy/index.ts';
import { PrivacyTrail } from '../../src/audit/privacy-trail.ts';
import type { DecisionBody } from '../../src/protocol/index.ts';
import { encodeRoundParams, type RoundPrivacy } from '../../src/round/index.ts';
import { nextRoundPrivacy, servicePrivacyOf } from '../../src/services/privacy-plan.ts';

const plan = planSkellamDp({ clipNorm: 0.1, noiseMultiplier: 1, expectedContributors: 3, dimension: 1000 });
const privacy = servicePrivacyOf(plan, 8, 8, 1e-5);
const BASE = { bits: 8, clip: 0.02, strategy: 'fedavg', learningRate: 0.1 };

function decision(
  round: number,
  record: RoundPrivacy | undefined,
  contributors = record?.contributors ?? 3,
): DecisionBody {
  return {
    round,
    commit: true,
    kind: 'round',
    params: encodeRoundParams({ ...BASE, round, ...(record === undefined ? {} : { privacy: record }) }),
    aggregate: { contributors: Array.from({ length: contributors }, (_, i) => ({ site: `site-${i}` })) },
  } as unknown as DecisionBody;
}

describe('PrivacyTrail (audit)', () => {
  it('passes records that add up, round after round', () => {
    const trail = new PrivacyTrail();
    const r1 = nextRoundPrivacy(privacy, null, 4);
    const r2 = nextRoundPrivacy(privacy, r1, 3);
    expect(trail.check(1, decision(1, r1))).toBeNull();
    expect(trail.check(2, decision(2, r2))).toBeNull();
    expect(trail.checked).toBe(2);
    expect(new PrivacyTrail().check(1, decision(1, undefined))).toBeNull(); // no privacy at all
  });

  it('names a reset, an under-reported ε, another mechanism, a wrong count and a dropped record', () => {
    const r1 = nextRoundPrivacy(privacy, null, 4);
    const r2 = nextRoundPrivacy(privacy, r1, 4);
    const secondRound = (second: DecisionBody) => {
      const trail = new PrivacyTrail();
      trail.check(1, decision(1, r1));
      return trail.check(2, second);
    };
    // The spending starts over: round 2 records a single round's RDP.
    expect(secondRound(decision(2, nextRoundPrivacy(privacy, null, 4)))?.message).toMatch(
      /^round 2: RDP at order 2 is .*, not more than the .* recorded before/,
    );
    expect(secondRound(decision(2, { ...r2, epsilon: r2.epsilon / 2 }))?.message).toMatch(
      /records ε .*, its own RDP gives/,
    );
    expect(secondRound(decision(2, { ...r2, clipNorm: 1 }))?.message).toMatch(
      /clipNorm 1, an earlier round recorded 0.1/,
    );
    expect(secondRound(decision(2, r2, 5))?.message).toMatch(/records 4 contributors, the decision lists 5/);
    expect(secondRound(decision(2, undefined))).toMatchObject({
      code: 'PRIVACY_RECORD_INVALID',
      sequence: 2,
    });
  });
});
