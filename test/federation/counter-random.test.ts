import { describe, expect, it } from 'vitest';
import {
  counterKey,
  counterRandom,
  counterUniform,
  lowbias32,
  UNIFORM_SCALE,
  uniformFromBits,
} from '../../federation/index.ts';

// Known answers computed independently (Python, explicit `& 0xffffffff` arithmetic) from the
// formulas in the TSDoc of counterRandom.
describe('lowbias32', () => {
  it('matches independently computed values', () => {
    expect(lowbias32(0)).toBe(0);
    expect(lowbias32(1)).toBe(0x688990c0);
    expect(lowbias32(2)).toBe(0xd1132181);
    expect(lowbias32(0xdeadbeef)).toBe(0xe628c683);
    expect(lowbias32(0xffffffff)).toBe(0x6768824a);
  });

  it('first step by hand: 1 -> x*0x7feb352d = 0x7feb352d, ^= >>>15 gives 0x7febcafb', () => {
    // Partial trace of lowbias32(1), so a wrong constant shows up even without the full answer.
    let x = Math.imul(1, 0x7feb352d) >>> 0;
    expect(x).toBe(0x7feb352d);
    x = (x ^ (x >>> 15)) >>> 0;
    expect(x).toBe(0x7febcafb);
  });

  it('returns uint32 and reads its input mod 2^32', () => {
    expect(lowbias32(-1)).toBe(lowbias32(0xffffffff));
    expect(lowbias32(2 ** 32 + 1)).toBe(lowbias32(1));
  });
});

describe('counterRandom', () => {
  it('pins the first outputs for key (1, 2)', () => {
    expect(counterKey(1, 2)).toBe(305810056);
    const got = [0, 1, 2, 3, 4, 5].map((c) => counterRandom(1, 2, c));
    expect(got).toEqual([3107935742, 925088798, 1197462427, 1245160998, 2590821496, 3131628071]);
  });

  it('pins the first outputs for key (0xdeadbeef, 0x12345678)', () => {
    const got = [0, 1, 2, 3].map((c) => counterRandom(0xdeadbeef, 0x12345678, c));
    expect(got).toEqual([2301443968, 2627533183, 4196939869, 134361234]);
  });

  it('equals the documented composition of lowbias32', () => {
    for (const [k0, k1, c] of [
      [0, 0, 0],
      [7, 0xffffffff, 123456],
      [0xffffffff, 5, 0xffffffff],
    ] as const) {
      const k = lowbias32(k0 ^ lowbias32(k1));
      expect(counterRandom(k0, k1, c)).toBe(lowbias32(lowbias32(c ^ k) + k1));
    }
  });

  it('never repeats over 100,000 consecutive counters (bijection of the counter)', () => {
    const seen = new Set<number>();
    for (let c = 0; c < 100_000; c++) seen.add(counterRandom(42, 43, c));
    expect(seen.size).toBe(100_000);
  });

  it('changes with either key half', () => {
    let same0 = 0;
    let same1 = 0;
    for (let c = 0; c < 1000; c++) {
      if (counterRandom(1, 2, c) === counterRandom(0, 2, c)) same0++;
      if (counterRandom(1, 2, c) === counterRandom(1, 3, c)) same1++;
    }
    expect(same0).toBe(0);
    expect(same1).toBe(0);
  });

  it('has balanced bits (each bit set in 50% ± 1.5% of 40,000 draws)', () => {
    const counts = new Array<number>(32).fill(0);
    const n = 40_000;
    for (let c = 0; c < n; c++) {
      const r = counterRandom(9, 10, c);
      for (let b = 0; b < 32; b++) if ((r >>> b) & 1) counts[b]!++;
    }
    for (const k of counts) expect(Math.abs(k / n - 0.5)).toBeLessThan(0.015);
  });

  it('rejects keys and counters outside uint32', () => {
    expect(() => counterRandom(-1, 0, 0)).toThrow(/key0/);
    expect(() => counterRandom(0, 2 ** 32, 0)).toThrow(/key1/);
    expect(() => counterRandom(0, 0, 1.5)).toThrow(/counter/);
  });
});

describe('uniform draws', () => {
  it('maps the top 24 bits to [0, 1) exactly in float32', () => {
    expect(UNIFORM_SCALE).toBe(2 ** -24);
    expect(uniformFromBits(0)).toBe(0);
    expect(uniformFromBits(0xff)).toBe(0);
    expect(uniformFromBits(0xffffffff)).toBe(1 - 2 ** -24);
    expect(uniformFromBits(0x80000000)).toBe(0.5);
    for (let c = 0; c < 1000; c++) {
      const w = counterUniform(3, 4, c);
      expect(Math.fround(w)).toBe(w);
      expect(w).toBeGreaterThanOrEqual(0);
      expect(w).toBeLessThan(1);
    }
  });

  it('pins the first draws for key (1, 2)', () => {
    expect(counterUniform(1, 2, 0)).toBe(0.7236226201057434);
    expect(counterUniform(1, 2, 1)).toBe(0.21538901329040527);
    expect(counterUniform(1, 2, 2)).toBe(0.2788059115409851);
  });
});
