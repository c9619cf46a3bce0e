import { beforeAll, describe, expect, it } from 'vitest';
import {
  centredBinomialCoefficients,
  commonRandomPoly,
  DEFAULT_THRESHOLD_PARAMS,
  expandPoly,
  getThresholdContext,
  type RnsPoly,
  randomPoly,
  type ThresholdContext,
  ternaryCoefficients,
  uniformNoiseCoefficients,
} from '../../crypto/threshold/index.ts';

let ctx: ThresholdContext;
beforeAll(async () => {
  ctx = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
});

/** The signed integer each coefficient holds, checking every limb holds the same one. */
function integers(p: RnsPoly): number[] {
  const out: number[] = [];
  for (let i = 0; i < ctx.n; i++) {
    let v: bigint | undefined;
    ctx.moduli.forEach((q, l) => {
      const w = p[l * ctx.n + i]!;
      const c = w > q / 2n ? w - q : w;
      if (v === undefined) v = c;
      else expect(c).toBe(v);
    });
    out.push(Number(v));
  }
  return out;
}

const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
const sd = (xs: number[]) => Math.sqrt(mean(xs.map((x) => x * x)) - mean(xs) ** 2);

describe('threshold samplers', () => {
  it('fresh error is centred binomial: |e| ≤ 21, σ ≈ 3.24, mean ≈ 0, the same integer in every limb', () => {
    const e = integers(centredBinomialCoefficients(ctx));
    expect(Math.max(...e.map(Math.abs))).toBeLessThanOrEqual(21);
    expect(sd(e)).toBeGreaterThan(3.1);
    expect(sd(e)).toBeLessThan(3.4);
    expect(Math.abs(mean(e))).toBeLessThan(0.15);
  });

  it('secrets are ternary, each of −1, 0, 1 about a third of the time', () => {
    const s = integers(ternaryCoefficients(ctx));
    for (const v of [-1, 0, 1]) {
      const share = s.filter((x) => x === v).length / s.length;
      expect(share).toBeGreaterThan(0.3);
      expect(share).toBeLessThan(0.37);
    }
    expect(s.every((x) => x >= -1 && x <= 1)).toBe(true);
  });

  it('flooding noise is uniform in [−B, B]', () => {
    const e = integers(uniformNoiseCoefficients(ctx, 1000n));
    expect(Math.max(...e)).toBeLessThanOrEqual(1000);
    expect(Math.min(...e)).toBeGreaterThanOrEqual(-1000);
    expect(sd(e) / (1000 / Math.sqrt(3))).toBeGreaterThan(0.96);
    expect(sd(e) / (1000 / Math.sqrt(3))).toBeLessThan(1.04);
  });

  it('uniform sampling refuses primes it cannot mask (below 33 bits); a label of a 64-byte attempt fits', () => {
    expect(() => expandPoly({ n: 4, moduli: [4294967291n] }, new Uint8Array(32))).toThrow(/33 to 63/);
    const label = `update:${'f'.repeat(63)}:${Number.MAX_SAFE_INTEGER}:${'ab'.repeat(64)}`;
    expect(label.length).toBeGreaterThan(200);
    expect(commonRandomPoly(ctx, new Uint8Array(32), label, 0).length).toBe(ctx.n * ctx.moduli.length);
  });

  it('uniform polynomials fill each limb below its prime, with the top bits in use', () => {
    for (const p of [randomPoly(ctx), commonRandomPoly(ctx, new Uint8Array(32), 'x', 0)]) {
      ctx.moduli.forEach((q, l) => {
        const limb = p.subarray(l * ctx.n, (l + 1) * ctx.n);
        expect(limb.every((w) => w < q)).toBe(true);
        // A quarter of uniform words below q sit in its top quarter.
        const top = limb.filter((w) => w >= (3n * q) / 4n).length / ctx.n;
        expect(top).toBeGreaterThan(0.22);
        expect(top).toBeLessThan(0.28);
      });
    }
  });
});
