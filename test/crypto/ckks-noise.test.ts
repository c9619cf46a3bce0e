import { beforeAll, describe, expect, it } from 'vitest';
import {
  CkksKeyset,
  DEFAULT_CKKS_PARAMS,
  FRESH_SLOT_NOISE_SIGMA_N8192_S16,
  getCkksContext,
  LANE_SUM_TOLERANCE,
  minScaleBits,
  NOISE_MARGIN_SIGMAS,
  type SealCiphertext,
  slotNoiseSigma,
} from '../../crypto/ckks/index.ts';

/** Two 8-bit lanes per slot with 18-bit headroom, as the codec packs 8-bit levels for ≤ 1,000 sites. */
function laneSlots(n: number): Float64Array {
  const v = new Float64Array(n);
  for (let i = 0; i < n; i++)
    v[i] = Math.floor(Math.random() * 256) * 2 ** 18 + Math.floor(Math.random() * 256);
  return v;
}

/** σ and max |error| of the decrypted sum of `k` fresh ciphertexts at `scaleBits`. */
async function sumError(scaleBits: number, k: number): Promise<{ sigma: number; max: number }> {
  const ctx = await getCkksContext({ ...DEFAULT_CKKS_PARAMS, scaleBits, exactBits: 59 - scaleBits });
  const keys = CkksKeyset.create(ctx);
  const truth = new Float64Array(ctx.slots);
  let acc: SealCiphertext | undefined;
  try {
    for (let i = 0; i < k; i++) {
      const v = laneSlots(ctx.slots);
      for (let j = 0; j < v.length; j++) truth[j]! += v[j]!;
      const ct = ctx.loadCiphertext(keys.encrypt(v));
      if (acc === undefined) acc = ct;
      else {
        ctx.addInPlace(acc, ct);
        ct.delete();
      }
    }
    const d = keys.decrypt(acc!);
    let ss = 0;
    let max = 0;
    for (let j = 0; j < d.length; j++) {
      const e = d[j]! - truth[j]!;
      ss += e * e;
      max = Math.max(max, Math.abs(e));
    }
    return { sigma: Math.sqrt(ss / d.length), max };
  } finally {
    acc?.delete();
    keys.delete();
  }
}

describe('CKKS slot noise of summed ciphertexts (the rule behind crypto.ckks.scaleBits)', () => {
  let one: { sigma: number; max: number };
  let sixtyFour: { sigma: number; max: number };

  beforeAll(async () => {
    one = await sumError(16, 1);
    sixtyFour = await sumError(16, 64);
  });

  // σ is estimated over 4,096 slots (relative error ~1%): 15% above the constant means it changed.
  it('a fresh ciphertext at N = 8192, scale 2^16 decrypts with σ no larger than the measured constant', () => {
    expect(one.sigma).toBeGreaterThan(0);
    expect(one.sigma).toBeLessThan(FRESH_SLOT_NOISE_SIGMA_N8192_S16 * 1.15);
  });

  it('the error of a sum grows as √K, as slotNoiseSigma models it', () => {
    expect(sixtyFour.sigma).toBeLessThan(slotNoiseSigma(8192, 16, 64) * 1.15);
    // Independent errors: far below K · σ, the bound of correlated ones.
    expect(sixtyFour.sigma).toBeLessThan(one.sigma * 64 * 0.25);
  });

  it('at the scale minScaleBits names for 1,000 contributors every slot of their sum stays readable', async () => {
    const scaleBits = minScaleBits(8192, 1000);
    expect(scaleBits).toBe(18);
    const { sigma, max } = await sumError(scaleBits, 1000);
    expect(sigma * NOISE_MARGIN_SIGMAS).toBeLessThan(LANE_SUM_TOLERANCE);
    expect(max).toBeLessThan(LANE_SUM_TOLERANCE);
  }, 120_000);

  it('the default scale holds up to 169 contributors at N = 8192, then needs a bit more per factor 4', () => {
    expect(minScaleBits(8192, 32)).toBeLessThanOrEqual(DEFAULT_CKKS_PARAMS.scaleBits);
    expect(minScaleBits(8192, 169)).toBe(16);
    expect(minScaleBits(8192, 170)).toBe(17);
    expect(minScaleBits(8192, 678)).toBe(17);
    expect(minScaleBits(8192, 679)).toBe(18);
    expect(minScaleBits(16_384, 169)).toBe(17);
    expect(() => minScaleBits(8192, 0)).toThrow('contributors must be a positive integer');
  });
});
