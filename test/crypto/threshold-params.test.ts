import { describe, expect, it } from 'vitest';
import {
  assertThresholdParams,
  DEFAULT_THRESHOLD_PARAMS,
  defaultThreshold,
  floodingBits,
  ROUNDING_MARGIN_SIGMAS,
  thresholdLimbs,
  thresholdParamsId,
  thresholdSlotSigma,
} from '../../crypto/threshold/index.ts';

describe('threshold parameters', () => {
  it('the defaults hold: flooding of 1,024 shares rounds with a 9σ margin, sums below 2^42 fit', () => {
    expect(() => assertThresholdParams(DEFAULT_THRESHOLD_PARAMS)).not.toThrow();
    expect(floodingBits(DEFAULT_THRESHOLD_PARAMS)).toBeCloseTo(47 + Math.log2(21 * 1024), 10);
    const sigma = thresholdSlotSigma(DEFAULT_THRESHOLD_PARAMS, 1024);
    expect(ROUNDING_MARGIN_SIGMAS * sigma).toBeLessThan(0.5);
    expect(thresholdLimbs(DEFAULT_THRESHOLD_PARAMS)).toBe(2);
  });

  it('refuses a scale too small for the flooding, naming the field and the scale needed', () => {
    expect(() => assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, scaleBits: 70 })).toThrow(
      /threshold\.scaleBits 70: noise flooding of 1024 shares needs at least 76/,
    );
    expect(() => assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, statisticalSecurityBits: 48 })).toThrow(
      /statisticalSecurityBits 48 with maxSites 1024: flooding of 2\^62\.4 is beyond the sampler/,
    );
    // A larger scale, room for more flooding, fits no sum of 42 bits in 120.
    expect(() => assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, scaleBits: 77 })).toThrow(
      /exactBits 42 \+ scaleBits 77 must be ≤ 118/,
    );
  });

  it('refuses sums that would not fit the ciphertext modulus, moduli beyond 128-bit security, bad sizes', () => {
    expect(() => assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, exactBits: 49 })).toThrow(
      /threshold\.exactBits 49/,
    );
    expect(() =>
      assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, coeffModulus: [60, 60, 60, 60] }),
    ).toThrow(/totals 240 bits, N=8192 allows 218/);
    expect(() => assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, maxSites: 1 })).toThrow(
      /threshold\.maxSites/,
    );
    expect(() =>
      assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, polyModulusDegree: 4096 as unknown as 8192 }),
    ).toThrow(/threshold\.polyModulusDegree 4096/);
  });

  it('fewer sites allowed means less flooding and a smaller scale will do', () => {
    expect(() =>
      assertThresholdParams({ ...DEFAULT_THRESHOLD_PARAMS, maxSites: 16, scaleBits: 68 }),
    ).not.toThrow();
    expect(thresholdParamsId({ ...DEFAULT_THRESHOLD_PARAMS, maxSites: 16, scaleBits: 68 })).not.toEqual(
      thresholdParamsId(DEFAULT_THRESHOLD_PARAMS),
    );
  });

  it('default threshold: ⌈2n/3⌉, at least minContributors, at most n', () => {
    expect(defaultThreshold(3, 2)).toBe(2);
    expect(defaultThreshold(4, 2)).toBe(3);
    expect(defaultThreshold(5, 2)).toBe(4);
    expect(defaultThreshold(10, 2)).toBe(7);
    expect(defaultThreshold(10, 8)).toBe(8);
    expect(defaultThreshold(3, 5)).toBe(3);
    expect(() => defaultThreshold(0, 1)).toThrow(/sites/);
  });
});
