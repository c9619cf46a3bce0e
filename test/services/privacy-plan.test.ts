import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { logisticRegression } from '../../federation/index.ts';
import {
  INTEGER_RDP_ORDERS,
  planSkellamDp,
  RdpLedger,
  seededUniformSource,
} from '../../federation/privacy/index.ts';
import { parseConfig } from '../../src/config/index.ts';
import type { ControlBodies } from '../../src/protocol/index.ts';
import { decodeRoundParams, encodeRoundParams, type RoundPrivacy } from '../../src/round/index.ts';
import type { AgentCore } from '../../src/services/agent/agent-core.ts';
import { checkPrivacyRecord } from '../../src/services/agent/privacy-record.ts';
import { privateLevels, privateMean } from '../../src/services/agent/private-update.ts';
import { VoteNo } from '../../src/services/agent/voter-error.ts';
import {
  budgetAdmits,
  nextRoundPrivacy,
  roundCharge,
  type ServicePrivacy,
  servicePrivacy,
  servicePrivacyOf,
  spentAt,
} from '../../src/services/privacy-plan.ts';
import {
  bytesToHex,
  type Commit,
  genesisCommit,
  rollbackCommit,
  roundCommit,
} from '../../src/versions/index.ts';

function privacyOf(settings: {
  dimension: number;
  noiseMultiplier: number;
  expectedContributors: number;
}): ServicePrivacy {
  const plan = planSkellamDp({ clipNorm: 1, ...settings });
  return servicePrivacyOf(plan, 8, 5, 1e-5);
}

const BASE = { round: 1, bits: 8, clip: 0.02, strategy: 'fedavg', learningRate: 0.1 };

describe('round params with a privacy record', () => {
  const record: RoundPrivacy = {
    contributors: 4,
    epsilon: 1.25,
    delta: 1e-5,
    deltaCost: 3e-20,
    noiseMultiplier: 1.5,
    clipNorm: 0.05,
    noiseShares: 3,
    rdp: [0.5, 0.75],
  };

  it('round-trips, with or without a data contract before it', () => {
    expect(decodeRoundParams(encodeRoundParams({ ...BASE, privacy: record }))).toEqual({
      ...BASE,
      clip: Math.fround(0.02),
      privacy: record,
    });
    const dataContract = 'ab'.repeat(32);
    expect(decodeRoundParams(encodeRoundParams({ ...BASE, dataContract, privacy: record }))).toEqual({
      ...BASE,
      clip: Math.fround(0.02),
      dataContract,
      privacy: record,
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 0xffff_ffff }),
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 130 }),
        (contributors, rdp) => {
          const p = { ...record, contributors, rdp };
          expect(decodeRoundParams(encodeRoundParams({ ...BASE, privacy: p })).privacy).toEqual(p);
        },
      ),
    );
  });

  it('refuses a bad record when encoding and a bad trailer when decoding', () => {
    expect(() => encodeRoundParams({ ...BASE, privacy: { ...record, epsilon: Number.NaN } })).toThrow(
      /privacy.epsilon NaN/,
    );
    expect(() => encodeRoundParams({ ...BASE, privacy: { ...record, rdp: [] } })).toThrow(/rdp.length/);
    const bytes = encodeRoundParams({ ...BASE, privacy: record });
    expect(() => decodeRoundParams(bytes.subarray(0, bytes.length - 1))).toThrow(/truncated/);
    const other = encodeRoundParams(BASE);
    const bad = new Uint8Array([...other, 0, 0, 0, 3, 0x61, 0x62, 0x63]);
    expect(() => decodeRoundParams(bad)).toThrow(/unknown trailer "abc"/);
  });
});

describe('what a federation has spent', () => {
  const privacy = privacyOf({ dimension: 1000, noiseMultiplier: 1, expectedContributors: 3 });
  const genesis = genesisCommit(new Float32Array(4), encodeRoundParams({ ...BASE, round: 0 }));
  const round = (parent: Commit, n: number, spent: RoundPrivacy | null, contributors: number) =>
    roundCommit(parent, {
      round: n,
      aggregateDigest: new Uint8Array(32).fill(n),
      modelHash: new Uint8Array(32).fill(n + 100),
      params: encodeRoundParams({
        ...BASE,
        round: n,
        privacy: nextRoundPrivacy(privacy, spent, contributors),
      }),
    });

  it('charges each round on top of the last round commit, through rollbacks, which undo no spending', () => {
    const byHash = new Map<string, Commit>();
    const keep = (c: Commit) => {
      byHash.set(bytesToHex(c.hash), c);
      return c;
    };
    keep(genesis);
    const read = (h: Uint8Array) => byHash.get(bytesToHex(h));
    expect(spentAt(genesis, read)).toBeNull();
    const r1 = keep(round(genesis, 1, null, 4));
    const r2 = keep(round(r1, 2, spentAt(r1, read), 3));
    const back = keep(rollbackCommit(r2, r1, 3, r1.params));
    // The rollback's params are round 1's, but the rounds spent are round 2's.
    expect(spentAt(back, read)).toEqual(spentAt(r2, read));
    const r4 = keep(round(back, 4, spentAt(back, read), 4));
    const ledger = new RdpLedger({ delta: 1e-5, orders: INTEGER_RDP_ORDERS });
    for (const k of [4, 3, 4]) ledger.charge(roundCharge(privacy, k));
    expect(spentAt(r4, read)!.epsilon).toBeCloseTo(ledger.spent().epsilon, 12);
    expect(spentAt(r4, read)!.deltaCost).toBeCloseTo(ledger.spent().deltaCost, 30);
    expect(() => spentAt(back, () => undefined)).toThrow(/is not held/);
    const bare = roundCommit(genesis, {
      round: 1,
      aggregateDigest: new Uint8Array(32),
      modelHash: new Uint8Array(32),
      params: encodeRoundParams(BASE),
    });
    expect(() => spentAt(bare, read)).toThrow(/records no privacy/);
  });

  it('admits a round only while the noisiest one that can commit stays within the budget', () => {
    const one = nextRoundPrivacy(privacy, null, 3);
    const tight = { ...privacy, epsilon: nextRoundPrivacy(privacy, one, 3).epsilon };
    expect(budgetAdmits(tight, one)).toBe(true);
    expect(budgetAdmits({ ...tight, epsilon: tight.epsilon * 0.999 }, one)).toBe(false);
    // More contributors than expected add more noise: a cheaper round.
    expect(nextRoundPrivacy(privacy, null, 6).epsilon).toBeLessThan(one.epsilon);
  });
});

describe('private levels on the wire', () => {
  it('sums to the mean of the clipped updates plus noise of the planned size', () => {
    const d = 4000;
    const k = 5;
    const privacy = privacyOf({ dimension: d, noiseMultiplier: 0.5, expectedContributors: k });
    const uniform = seededUniformSource(3, 9);
    const updates = Array.from({ length: k }, (_, s) =>
      Float32Array.from({ length: d }, (_, i) => Math.sin(i + s) * 0.05),
    );
    const sums = new Float64Array(d * privacy.digits);
    for (const u of updates) {
      const { levels } = privateLevels(privacy, u, 8, uniform);
      for (let i = 0; i < levels.length; i++) sums[i]! += levels[i]!;
    }
    const { mean, clamped } = privateMean(privacy, sums, 8, k);
    expect(clamped).toBe(0);
    // Every update is clipped to norm 1 (their norms are ≈ 2.2), then averaged.
    const clipped = updates.map((u) => {
      const norm = Math.hypot(...u);
      return u.map((v) => v / norm);
    });
    const sd = Math.sqrt(k * privacy.plan.localVariance) / (privacy.plan.scale * k);
    let squares = 0;
    for (let i = 0; i < d; i++) {
      const exact = clipped.reduce((a, u) => a + u[i]!, 0) / k;
      squares += (mean[i]! - exact) ** 2;
    }
    const rms = Math.sqrt(squares / d);
    // Noise (sd) plus rounding (< 1 level a site): within 10% of the planned noise.
    expect(rms / sd).toBeGreaterThan(0.9);
    expect(rms / sd).toBeLessThan(1.1);
  });

  it('clamps digit sums that no contributors in range could have sent, and refuses bad shapes', () => {
    const privacy = privacyOf({ dimension: 2, noiseMultiplier: 0.5, expectedContributors: 2 });
    // Parameter 0 at the digits' maximum (a hostile site's lanes), parameter 1 at the offset (0).
    const sums = new Float64Array(2 * privacy.digits);
    sums.fill(255 * 2, 0, privacy.digits);
    let offset = 2 * privacy.plan.valueBound;
    for (let d = 0; d < privacy.digits; d++) {
      sums[privacy.digits + d] = offset % 256;
      offset = Math.floor(offset / 256);
    }
    const { mean, clamped } = privateMean(privacy, sums, 8, 2);
    expect(clamped).toBe(1);
    expect(mean[0]).toBeCloseTo((2 * privacy.plan.valueBound) / (privacy.plan.scale * 2), 5);
    expect(mean[1]).toBe(0);
    expect(() => privateMean(privacy, new Float64Array(3), 8, 2)).toThrow(/3 lane sums/);
    expect(() => privateLevels(privacy, new Float32Array(3), 8)).toThrow(
      /update length 3, the privacy plan expects 2/,
    );
  });
});

describe('a site checks the privacy record of a PREPARE', () => {
  // The parts of an agent the check reads: its configuration, model and commit store.
  const config = parseConfig({
    federation: { id: 'f' },
    round: { minContributors: 2 },
    privacy: { epsilon: 8, clipNorm: 0.1, noiseMultiplier: 1 },
  });
  const spec = logisticRegression(4, 2);
  const genesis = genesisCommit(new Float32Array(10), encodeRoundParams({ ...BASE, round: 0 }));
  const core = {
    ctx: { config },
    spec,
    store: { hasCommit: () => false, readCommit: () => genesis },
  } as unknown as AgentCore;
  const prepare = {
    round: 1,
    contributors: [{ site: 'a' }, { site: 'b' }, { site: 'c' }],
  } as unknown as ControlBodies['prepare'];
  const privacy = servicePrivacy(config, spec)!;

  it('accepts exactly its own count and refuses any other, naming both', () => {
    const right = nextRoundPrivacy(privacy, null, 3);
    expect(() => checkPrivacyRecord(core, genesis, prepare, () => right)).not.toThrow();
    const under = { ...right, epsilon: right.epsilon / 2 };
    expect(() => checkPrivacyRecord(core, genesis, prepare, () => under)).toThrow(
      new RegExp(
        `PREPARE records ε ${under.epsilon} after 3 contributors for round 1; I count ε ${right.epsilon} after 3`,
      ),
    );
    // A coordinator configured with another clip (or noise) records another mechanism: NO.
    expect(() => checkPrivacyRecord(core, genesis, prepare, () => ({ ...right, clipNorm: 1 }))).toThrow(
      VoteNo,
    );
    const fewer = nextRoundPrivacy(privacy, null, 4);
    expect(() => checkPrivacyRecord(core, genesis, prepare, () => fewer)).toThrow(VoteNo);
    expect(() => checkPrivacyRecord(core, genesis, prepare, () => null)).toThrow(
      /PREPARE records no privacy/,
    );
  });

  it('does not read the params of a federation without privacy', () => {
    const plain = {
      ...core,
      ctx: { config: parseConfig({ federation: { id: 'f' } }) },
    } as unknown as AgentCore;
    expect(() =>
      checkPrivacyRecord(plain, genesis, prepare, () => {
        throw new Error('read');
      }),
    ).not.toThrow();
  });
});
