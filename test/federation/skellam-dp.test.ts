import { describe, expect, it } from 'vitest';
import {
  addSkellamNoise,
  calibrateNoiseMultiplier,
  INTEGER_RDP_ORDERS,
  planSkellamDp,
  poissonSubsampledRdp,
  rdpToEpsilon,
  roundedNormBound,
  roundWithinNorm,
  sampledGaussianRdp,
  samplePoisson,
  sampleSkellam,
  seededUniformSource,
  skellamEpsilon,
  skellamRangeFor,
  skellamRdp,
  skellamRoundCharge,
  skellamTailBound,
} from '../../federation/privacy/index.ts';

describe('poissonSubsampledRdp (Zhu & Wang 2019)', () => {
  it('with factor 1 (Thm 6) and the Gaussian base, equals the exact subsampled Gaussian RDP at integer orders', () => {
    // The exact SGM values are themselves checked against published ones in rdp-accountant.test.ts.
    for (const [q, sigma] of [
      [0.1, 2],
      [0.01, 1.1],
      [0.5, 0.8],
    ] as const) {
      for (const order of [2, 3, 7, 32, 128]) {
        const exact = sampledGaussianRdp(q, sigma, 1, [order])[0]!;
        const thm6 = poissonSubsampledRdp(q, order, (l) => l / (2 * sigma * sigma), 1);
        expect(thm6 / exact, `q ${q} σ ${sigma} α ${order}`).toBeCloseTo(1, 9);
      }
    }
  });

  it('Thm 5 (factor 3) bounds it from above, never above the unsampled RDP; q = 1 and q = 0 are the ends', () => {
    const base = (l: number) => l / (2 * 1.5 * 1.5);
    for (const order of [2, 5, 20, 256]) {
      const thm5 = poissonSubsampledRdp(0.05, order, base);
      expect(thm5).toBeGreaterThanOrEqual(poissonSubsampledRdp(0.05, order, base, 1));
      expect(thm5).toBeLessThanOrEqual(base(order));
      expect(poissonSubsampledRdp(1, order, base)).toBe(base(order));
      expect(poissonSubsampledRdp(0, order, base)).toBe(0);
    }
    expect(() => poissonSubsampledRdp(0.1, 2.5, base)).toThrow(/order 2.5 must be an integer ≥ 2/);
    expect(() => poissonSubsampledRdp(1.5, 2, base)).toThrow(/sampling rate q is 1.5/);
  });
});

describe('skellamRdp (Agarwal, Kairouz, Liu 2021)', () => {
  it('matches the bound computed by hand', () => {
    // α 2, Δ₂ 10, Δ₁ 50, μ 1000: 2·100/2000 = 0.1, plus min((3·100 + 6·50)/(4·10⁶), 3·50/2000)
    // = min(1.5e-4, 0.075) = 1.5e-4.
    expect(skellamRdp(2, { l2: 10, l1: 50 }, 1000)).toBeCloseTo(0.10015, 12);
    // α 3, Δ₂ 2, Δ₁ 4, μ 1: 3·4/2 = 6, plus min((5·4 + 24)/4, 3·4/2) = min(11, 6) = 6.
    expect(skellamRdp(3, { l2: 2, l1: 4 }, 1)).toBeCloseTo(12, 12);
  });

  it('approaches the Gaussian α·Δ₂²/(2μ) as the variance grows', () => {
    const sens = { l2: 100, l1: 5000 };
    for (const mu of [1e5, 1e7, 1e9]) {
      const gaussian = (8 * 100 * 100) / (2 * mu);
      const ratio = skellamRdp(8, sens, mu) / gaussian;
      expect(ratio).toBeGreaterThanOrEqual(1);
      expect(ratio - 1).toBeLessThan(1e3 / mu);
    }
    expect(() => skellamRdp(2, { l2: 0, l1: 1 }, 1)).toThrow(/sensitivity.l2 is 0/);
    expect(() => skellamRdp(1, { l2: 1, l1: 1 }, 1)).toThrow(/order 1 must be finite and > 1/);
  });
});

describe('Poisson and Skellam sampling', () => {
  const moments = (draw: () => number, n: number) => {
    let s = 0;
    let s2 = 0;
    for (let i = 0; i < n; i++) {
      const x = draw();
      s += x;
      s2 += x * x;
    }
    const mean = s / n;
    return { mean, variance: s2 / n - mean * mean };
  };

  it('draws Poisson(λ) with mean and variance λ on both sides of the method switch at 10', () => {
    const uniform = seededUniformSource(7, 1);
    const n = 100_000;
    for (const lambda of [0.3, 4, 9.5, 10, 40, 5000]) {
      const { mean, variance } = moments(() => samplePoisson(lambda, uniform), n);
      const se = Math.sqrt(lambda / n);
      expect(Math.abs(mean - lambda), `λ ${lambda} mean ${mean}`).toBeLessThan(5 * se);
      expect(Math.abs(variance / lambda - 1), `λ ${lambda} variance ${variance}`).toBeLessThan(0.03);
    }
    let zeros = 0;
    for (let i = 0; i < n; i++) if (samplePoisson(0.5, uniform) === 0) zeros++;
    expect(Math.abs(zeros / n - Math.exp(-0.5))).toBeLessThan(5 * Math.sqrt((0.61 * 0.39) / n));
    expect(samplePoisson(0, uniform)).toBe(0);
    expect(() => samplePoisson(-1, uniform)).toThrow(/Poisson mean is -1/);
  });

  it('draws integer Skellam noise of mean 0 and the asked variance, and clamps it to the range', () => {
    const uniform = seededUniformSource(8, 1);
    const { mean, variance } = moments(() => sampleSkellam(300, uniform), 100_000);
    expect(Math.abs(mean)).toBeLessThan(5 * Math.sqrt(300 / 100_000));
    expect(Math.abs(variance / 300 - 1)).toBeLessThan(0.03);
    const values = new Int32Array(10_000).fill(7);
    const clamped = addSkellamNoise(values, 10_000, 5, uniform);
    expect(clamped).toBeGreaterThan(9_000); // sd 100 against a range of ±5
    for (const v of values) expect(Math.abs(v - 7)).toBeLessThanOrEqual(5);
    expect(() => addSkellamNoise(values, 1, 1.5, uniform)).toThrow(/noise range is 1.5/);
  });

  it('sizes the smallest range whose Bernstein tail bound is below the probability', () => {
    for (const [v, p] of [
      [1, 1e-6],
      [1e4, 2 ** -80],
      [3e7, 1e-12],
    ] as const) {
      const r = skellamRangeFor(v, p);
      expect(skellamTailBound(v, r)).toBeLessThanOrEqual(p);
      expect(skellamTailBound(v, r - 1)).toBeGreaterThan(p);
    }
  });
});

describe('conditional randomized rounding', () => {
  it('bounds the rounded norm as Kairouz, Liu, Steinke do (hand-computed)', () => {
    // c 3, d 4, β e^(−1/2): √(9 + 1 + 1·(3 + 1)) = √14 < 3 + 2.
    expect(roundedNormBound(3, 4, Math.exp(-0.5))).toBeCloseTo(Math.sqrt(14), 12);
    // Tiny β: the sure bound c + √d wins.
    expect(roundedNormBound(3, 4, 1e-300)).toBe(5);
  });

  it('rounds without bias and never past the bound', () => {
    const uniform = seededUniformSource(9, 1);
    const x = Float32Array.from([0.25, -0.5, 0.125, 0.9]);
    const scale = 4; // [1, −2, 0.5, 3.6]
    const bound = roundedNormBound(4 * Math.hypot(...x), 4, Math.exp(-0.5));
    const sums = new Float64Array(4);
    const n = 20_000;
    for (let t = 0; t < n; t++) {
      const { levels } = roundWithinNorm(x, scale, bound, uniform);
      expect(Math.hypot(...levels)).toBeLessThanOrEqual(bound);
      for (let i = 0; i < 4; i++) sums[i]! += levels[i]!;
    }
    // Integers stay exact; the conditioning shifts the others slightly toward 0, by < 0.05 here.
    expect(sums[0]! / n).toBe(1);
    expect(sums[1]! / n).toBe(-2);
    expect(Math.abs(sums[2]! / n - 0.5)).toBeLessThan(0.05);
    expect(Math.abs(sums[3]! / n - 3.6)).toBeLessThan(0.05);
  });

  it('refuses a non-finite value by index and a bound no rounding can meet', () => {
    const uniform = seededUniformSource(10, 1);
    expect(() => roundWithinNorm(Float32Array.from([1, Number.NaN]), 1, 10, uniform)).toThrow(
      /update\[1\] is NaN/,
    );
    expect(() => roundWithinNorm(Float32Array.from([3, 4]), 1, 4.9, uniform)).toThrow(
      /no randomized rounding in 64 tries/,
    );
  });
});

describe('planSkellamDp and the round charge', () => {
  const settings = { clipNorm: 0.5, noiseMultiplier: 1.2, expectedContributors: 10, dimension: 10_000 };

  it('derives scale, sensitivity, each site’s variance and the lane range from the settings', () => {
    const plan = planSkellamDp(settings);
    expect(plan.settings.clipLevels).toBe(400); // 4·√10⁴
    expect(plan.scale).toBe(800);
    expect(plan.sensitivity.l2).toBeCloseTo(roundedNormBound(400, 10_000, Math.exp(-0.5)), 12);
    expect(plan.sensitivity.l1).toBeCloseTo(100 * plan.sensitivity.l2, 9);
    expect(plan.localVariance).toBeCloseTo((1.2 * plan.sensitivity.l2) ** 2 / 10, 9);
    expect(plan.valueBound).toBe(Math.floor(plan.sensitivity.l2) + plan.noiseRange);
    expect(() => planSkellamDp({ ...settings, expectedContributors: 0 })).toThrow(
      /expectedContributors is 0/,
    );
    expect(() => planSkellamDp({ ...settings, clipNorm: Number.NaN })).toThrow(/clipNorm is NaN/);
  });

  it('charges more ε when fewer sites add their shares, and the clamp chance to δ', () => {
    const plan = planSkellamDp(settings);
    const full = skellamRoundCharge(plan, 10);
    const short = skellamRoundCharge(plan, 5);
    for (const [i, r] of full.rdp.entries()) expect(short.rdp[i]!).toBeGreaterThan(r);
    expect(full.deltaCost).toBe(10 * 10_000 * 2 ** -80);
    // With every share present the summed noise has σ = z·Δ₂: close to the Gaussian mechanism at z.
    const gaussian = sampledGaussianRdp(1, 1.2, 1, INTEGER_RDP_ORDERS);
    expect(full.rdp[0]! / gaussian[0]!).toBeCloseTo(1, 4);
  });

  it('calibrates the smallest noise multiplier that keeps the planned rounds within ε', () => {
    const target = { epsilon: 4, delta: 1e-5, rounds: 100, samplingRate: 0.1 };
    const base = { clipNorm: 1, expectedContributors: 100, dimension: 199_210 };
    const z = calibrateNoiseMultiplier(base, target);
    expect(skellamEpsilon({ ...base, noiseMultiplier: z }, target).epsilon).toBeLessThanOrEqual(4);
    expect(skellamEpsilon({ ...base, noiseMultiplier: z / 1.002 }, target).epsilon).toBeGreaterThan(4);
    expect(calibrateNoiseMultiplier(base, { ...target, epsilon: 8 })).toBeLessThan(z);
    // Without sampling the Skellam mechanism needs what the Gaussian needs (to 0.5%).
    const full = calibrateNoiseMultiplier(base, { ...target, samplingRate: 1 });
    const gaussianEps = rdpToEpsilon(
      INTEGER_RDP_ORDERS,
      sampledGaussianRdp(1, full, 100, INTEGER_RDP_ORDERS),
      1e-5,
    );
    expect(Math.abs(gaussianEps.epsilon - 4) / 4).toBeLessThan(0.005);
  });
});
