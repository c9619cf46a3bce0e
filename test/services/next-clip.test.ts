import { describe, expect, it } from 'vitest';
import { nextRoundClip } from '../../src/services/coordinator/next-clip.ts';

describe('nextRoundClip', () => {
  it('is the multiplier times the median of the reported RMS (hand-computed)', () => {
    expect(nextRoundClip(0.02, [0.003, 0.001, 0.002], 6)).toBeCloseTo(0.012, 15);
    // Even count: the mean of the two middle values.
    expect(nextRoundClip(0.02, [0.004, 0.001, 0.002, 0.003], 6)).toBeCloseTo(0.015, 15);
  });

  it('does not follow one voter reporting a huge RMS', () => {
    expect(nextRoundClip(0.02, [0.002, 0.002, 0.002, 0.002, 1e6], 6)).toBeCloseTo(0.012, 15);
  });

  it('ignores reports that are not finite and positive, and keeps the clip without any', () => {
    expect(nextRoundClip(0.02, [Number.NaN, -1, 0, Number.POSITIVE_INFINITY, 0.002], 6)).toBeCloseTo(
      0.012,
      15,
    );
    expect(nextRoundClip(0.02, [], 6)).toBe(0.02);
    expect(nextRoundClip(0.02, [0, Number.NaN], 6)).toBe(0.02);
    expect(nextRoundClip(0.02, [1e-50], 6)).toBe(0.02); // below float32: not a usable clip
  });
});
