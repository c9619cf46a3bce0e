// The RMS histogram every training update carries: one-hot buckets, and the median the sites
// read from the sum (hand-worked), robust to one contribution that writes other lanes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { medianRmsOf, RMS_BUCKETS, rmsLevels } from '../../src/protocol/index.ts';

const CLIP = 0.06;

function histogram(...rms: number[]): number[] {
  const out = new Array<number>(RMS_BUCKETS).fill(0);
  for (const r of rms) {
    rmsLevels(r, CLIP).forEach((v, j) => {
      out[j]! += v;
    });
  }
  return out;
}

describe('RMS histogram lanes', () => {
  it('puts one 1 in the half-octave bucket of the RMS relative to the clip', () => {
    // clip / 6 = 0.01: log2(1/6) = −2.585, ×2 = −5.17 → floor −6, + 24 = bucket 18.
    expect(Array.from(rmsLevels(0.01, CLIP)).indexOf(1)).toBe(18);
    expect(rmsLevels(0.01, CLIP).reduce((a, b) => a + b, 0)).toBe(1);
    // The clip itself starts bucket 24; tiny and huge values land in the end buckets.
    expect(Array.from(rmsLevels(CLIP, CLIP)).indexOf(1)).toBe(24);
    expect(Array.from(rmsLevels(0, CLIP)).indexOf(1)).toBe(0);
    expect(Array.from(rmsLevels(1e9, CLIP)).indexOf(1)).toBe(RMS_BUCKETS - 1);
    expect(() => rmsLevels(Number.NaN, CLIP)).toThrow(/rms/);
  });

  it('the median of the sum is the middle of the lower median’s bucket', () => {
    // Five sites: buckets 18, 18, 18, 20, 31: the 3rd smallest is in 18, whose middle is
    // clip · 2^((18.5 − 24) / 2) = 0.06 · 2^−2.75.
    const h = histogram(0.01, 0.0105, 0.0102, 0.02, 5);
    expect(medianRmsOf(h, CLIP, 5)).toBeCloseTo(CLIP * 2 ** -2.75, 12);
  });

  it('is null unless the counts are exactly `contributors` one-hot histograms', () => {
    const h = histogram(0.01, 0.01, 0.01);
    expect(medianRmsOf(h, CLIP, 4)).toBeNull();
    const inflated = [...h];
    inflated[31]! += 250;
    expect(medianRmsOf(inflated, CLIP, 4)).toBeNull();
    // Privacy rounds send no bucket: nothing to read, the clip stays.
    expect(medianRmsOf(new Array(RMS_BUCKETS).fill(0), CLIP, 3)).toBeNull();
  });

  it('one contribution moves the median by at most two places, whatever it writes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 1e-6, max: 1, noNaN: true }), { minLength: 4, maxLength: 15 }),
        fc.nat(RMS_BUCKETS - 1),
        fc.nat(RMS_BUCKETS - 1),
        (honest, up, down) => {
          const n = honest.length + 1;
          const h = histogram(...honest);
          // The liar adds one in `up` and, if it can, cancels an honest one in `down`, keeping n.
          const lied = [...h];
          lied[up]! += 1;
          if (lied[down]! > 0 && down !== up) {
            lied[down]! -= 1;
            lied[up]! += 1;
          }
          const total = lied.reduce((a, b) => a + b, 0);
          const got = medianRmsOf(lied, CLIP, total);
          const sorted = honest.map((r) => Array.from(rmsLevels(r, CLIP)).indexOf(1)).sort((a, b) => a - b);
          const bucket = Math.round(2 * Math.log2(got! / CLIP) - 0.5 + 24);
          const rank = Math.ceil(total / 2) - 1;
          // Within two places of the honest order statistics around the median.
          const lo = sorted[Math.max(0, rank - 2)]!;
          const hi = sorted[Math.min(sorted.length - 1, rank + 1)]!;
          expect(total === n || total === n + 1).toBe(true);
          expect(bucket >= Math.min(lo, up) && bucket <= Math.max(hi, up)).toBe(true);
        },
      ),
    );
  });
});
