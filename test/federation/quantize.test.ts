import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  counterUniform,
  dequantize,
  dequantizeSum,
  QUANT_BITS,
  type QuantBits,
  quantizationStep,
  quantize,
  sumErrorBound,
} from '../../federation/index.ts';
import { InvalidArgumentError, UpdateError } from '../../src/errors/index.ts';
import { rng } from '../helpers/rng.ts';

const f = Math.fround;
const SEED = { key0: 1, key1: 2 };

function randomUpdate(next: () => number, n: number, scale: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (next() * 2 - 1) * scale;
  return out;
}

describe('grid', () => {
  it('step is 2·clip / (2^b − 1) in float32', () => {
    expect(quantizationStep(2, 1.5)).toBe(1);
    expect(quantizationStep(1, 1.5)).toBe(3);
    expect(quantizationStep(4, 7.5)).toBe(1);
    expect(quantizationStep(8, 0.1)).toBe(f(f(2 * f(0.1)) / 255));
  });

  it('bits 2, clip 1.5 has values −1.5, −0.5, 0.5, 1.5; bits 1 gives ±clip', () => {
    expect(Array.from(dequantize(Uint8Array.of(0, 1, 2, 3), 2, 1.5))).toEqual([-1.5, -0.5, 0.5, 1.5]);
    expect(Array.from(dequantize(Uint8Array.of(0, 1), 1, 0.25))).toEqual([-0.25, 0.25]);
    expect(Array.from(dequantize(Uint8Array.of(0, 255), 8, 0.1))).toEqual([-f(0.1), f(0.1)]);
  });

  it('rejects bad bits and clip', () => {
    for (const bits of [0, 3, 16, 1.5]) {
      expect(() => quantizationStep(bits as QuantBits, 1)).toThrow(InvalidArgumentError);
    }
    for (const clip of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e-50, 1e39]) {
      expect(() => quantizationStep(8, clip)).toThrow(/clip/);
    }
  });
});

describe('quantize: hand-computed fixture (bits 2, clip 1.5, Δ = 1)', () => {
  // Draws of key (1, 2) for counters 0..7, pinned in counter-random.test.ts:
  // 0.7236, 0.2154, 0.2788, 0.2899, 0.6032, 0.7291, 0.7926, 0.3581.
  const update = Float32Array.of(-1.5, 0, 0.25, -1.25, 1, 3, -2, 0.5);
  // i: u → t, frac, draw → ℓ, value, residual
  // 0: −1.5 → 0, 0             → 0, −1.5, 0
  // 1:  0   → 1.5, .5, .2154   → 2,  0.5, −0.5
  // 2: .25  → 1.75, .75, .2788 → 2,  0.5, −0.25
  // 3: −1.25 → .25, .25, .2899 → 0, −1.5, 0.25
  // 4:  1   → 2.5, .5, .6032   → 2,  0.5, 0.5
  // 5:  3   → clamp 1.5, t 3   → 3,  1.5, 1.5 (clipped-off mass)
  // 6: −2   → clamp −1.5, t 0  → 0, −1.5, −0.5
  // 7: 0.5  → 2, 0             → 2,  0.5, 0
  const levels = [0, 2, 2, 0, 2, 3, 0, 2];
  const residual = [0, -0.5, -0.25, 0.25, 0.5, 1.5, -0.5, 0];

  it('uses the pinned draws', () => {
    expect([1, 2, 3, 4].map((c) => counterUniform(1, 2, c) < [0.5, 0.75, 0.25, 0.5][c - 1]!)).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  it('produces the hand-computed levels and residual', () => {
    const r = quantize(update, null, { bits: 2, clip: 1.5, seed: SEED });
    expect(Array.from(r.levels)).toEqual(levels);
    expect(Array.from(r.residual)).toEqual(residual);
  });

  it('adds the residual first (u = update + residual)', () => {
    const half = update.map((x) => x / 2);
    const r = quantize(half, half, { bits: 2, clip: 1.5, seed: SEED });
    expect(Array.from(r.levels)).toEqual(levels);
    expect(Array.from(r.residual)).toEqual(residual);
  });

  it('counterBase shifts the counters: element i draws counter counterBase + i', () => {
    // Element 0 = 0 (t 1.5, frac .5) with counterBase 1 draws 0.2154 → ℓ 2; with base 4, 0.6032 → ℓ 1.
    expect(
      quantize(Float32Array.of(0), null, { bits: 2, clip: 1.5, seed: SEED, counterBase: 1 }).levels[0],
    ).toBe(2);
    expect(
      quantize(Float32Array.of(0), null, { bits: 2, clip: 1.5, seed: SEED, counterBase: 4 }).levels[0],
    ).toBe(1);
    const whole = quantize(update, null, { bits: 2, clip: 1.5, seed: SEED });
    const tail = quantize(update.subarray(3), null, { bits: 2, clip: 1.5, seed: SEED, counterBase: 3 });
    expect(Array.from(tail.levels)).toEqual(Array.from(whole.levels.subarray(3)));
  });

  it('counters wrap mod 2^32', () => {
    const x = new Float32Array(4).fill(0.1);
    const wrapped = quantize(x, null, { bits: 4, clip: 1, seed: SEED, counterBase: 2 ** 32 - 2 });
    const a = quantize(x.subarray(0, 2), null, { bits: 4, clip: 1, seed: SEED, counterBase: 2 ** 32 - 2 });
    const b = quantize(x.subarray(2), null, { bits: 4, clip: 1, seed: SEED, counterBase: 0 });
    expect(Array.from(wrapped.levels)).toEqual([...a.levels, ...b.levels]);
  });
});

describe('quantize: clipping', () => {
  it('keeps the clipped-off mass in the residual', () => {
    const r = quantize(Float32Array.of(5, -5, 1.25), null, { bits: 1, clip: 1, seed: SEED });
    expect(Array.from(r.levels)).toEqual([1, 0, 1]);
    expect(Array.from(r.residual)).toEqual([4, -4, 0.25]);
  });

  it('sends the clipped mass in later rounds when updates stop', () => {
    let residual: Float32Array | null = null;
    let sent = 0;
    const zero = Float32Array.of(0);
    const first = quantize(Float32Array.of(10), null, { bits: 8, clip: 1, seed: SEED });
    sent += dequantize(first.levels, 8, 1)[0]!;
    residual = first.residual;
    for (let t = 1; t < 40; t++) {
      const r = quantize(zero, residual, { bits: 8, clip: 1, seed: SEED, counterBase: t });
      sent += dequantize(r.levels, 8, 1)[0]!;
      residual = r.residual;
    }
    expect(Math.abs(sent - 10)).toBeLessThan(quantizationStep(8, 1));
    expect(Math.abs(residual[0]!)).toBeLessThan(quantizationStep(8, 1));
  });
});

describe('quantize: properties', () => {
  const bitsArb = fc.constantFrom<QuantBits>(...QUANT_BITS);
  const floats = fc.float32Array({
    minLength: 0,
    maxLength: 64,
    noNaN: true,
    noDefaultInfinity: true,
    min: f(-1e30),
    max: f(1e30),
  });

  it('levels are always in [0, 2^b − 1] and value(ℓ) is within one step of clamp(u)', () => {
    fc.assert(
      fc.property(
        bitsArb,
        floats,
        fc.double({ min: 1e-20, max: 1e20, noNaN: true }),
        fc.nat(0xffffffff),
        fc.nat(0xffffffff),
        fc.nat(0xffffffff),
        (bits, update, clip, key0, key1, counterBase) => {
          const r = quantize(update, null, { bits, clip, seed: { key0, key1 }, counterBase });
          const step = quantizationStep(bits, clip);
          const c = f(clip);
          const values = dequantize(r.levels, bits, clip);
          for (let i = 0; i < update.length; i++) {
            expect(r.levels[i]!).toBeLessThanOrEqual(2 ** bits - 1);
            expect(Number.isFinite(r.residual[i]!)).toBe(true);
            const clamped = Math.min(Math.max(update[i]!, -c), c);
            expect(Math.abs(values[i]! - clamped)).toBeLessThanOrEqual(step + c * 2 ** -21);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('matches a plain reference of the documented formula (inlined RNG = counterRandom)', () => {
    fc.assert(
      fc.property(
        bitsArb,
        floats,
        fc.double({ min: 1e-3, max: 1e3, noNaN: true }),
        fc.nat(0xffffffff),
        fc.nat(0xffffffff),
        fc.constantFrom(0, 2 ** 31 - 5, 2 ** 32 - 7, 123_456_789),
        (bits, raw, clip, key0, key1, counterBase) => {
          const update = raw.map((x) => x * 1e-30 * clip); // raw is up to 1e30: bring near the grid
          const residual = update.map((x, i) => (i % 3 === 0 ? f(x / 3) : 0));
          const r = quantize(update, residual, { bits, clip, seed: { key0, key1 }, counterBase });
          const C = f(clip);
          const step = f(f(2 * C) / (2 ** bits - 1));
          const inverse = f(1 / step);
          for (let i = 0; i < update.length; i++) {
            const u = f(update[i]! + residual[i]!);
            const c = Math.min(Math.max(u, -C), C);
            const t = f(f(c + C) * inverse);
            const lo = Math.floor(t);
            const w = counterUniform(key0, key1, (counterBase + i) % 2 ** 32);
            const level = Math.min(lo + (w < f(t - lo) ? 1 : 0), 2 ** bits - 1);
            expect(r.levels[i]).toBe(level);
            expect(r.residual[i]).toBe(f(u - f(f(level * step) - C)));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('is deterministic: same seed → same levels; another key half → other levels', () => {
    const next = rng(7);
    const update = randomUpdate(next, 2000, 1);
    for (const bits of QUANT_BITS) {
      const p = { bits, clip: 0.9, seed: { key0: 11, key1: 12 } };
      const a = quantize(update, null, p);
      const b = quantize(update, null, p);
      expect(b.levels).toEqual(a.levels);
      expect(b.residual).toEqual(a.residual);
      const c = quantize(update, null, { ...p, seed: { key0: 10, key1: 12 } });
      const d = quantize(update, null, { ...p, seed: { key0: 11, key1: 13 } });
      expect(c.levels).not.toEqual(a.levels);
      expect(d.levels).not.toEqual(a.levels);
    }
  });

  it('is unbiased: mean of 100,000 quantizations of a constant is within 4 standard errors', () => {
    const n = 100_000;
    for (const bits of QUANT_BITS) {
      for (const x of [0.3, -0.77, 0.01]) {
        const clip = 1;
        const r = quantize(new Float32Array(n).fill(x), null, {
          bits,
          clip,
          seed: { key0: 2024, key1: bits },
        });
        const values = dequantize(r.levels, bits, clip);
        let sum = 0;
        for (let i = 0; i < n; i++) sum += values[i]!;
        const mean = sum / n;
        // ℓ is Bernoulli between two neighbours: variance step² · p(1 − p), p = frac(t).
        const step = quantizationStep(bits, clip);
        const t = (f(x) + clip) / step;
        const p = t - Math.floor(t);
        const se = (step * Math.sqrt(p * (1 - p))) / Math.sqrt(n);
        expect(Math.abs(mean - f(x))).toBeLessThanOrEqual(4 * se + 1e-7);
      }
    }
  });

  it('error feedback telescopes: Σ_t dequantize(levels_t) + e_T = Σ_t update_t over 50 rounds', () => {
    // Tolerance, per parameter: Σ_t 2^-23 · (|u_t| + |e_t|) + 2^-140 · 50. Each round rounds u_t and
    // e_t to float32 once each (half an ulp ≤ 2^-24·|x|, doubled for margin); the 2^-140 term covers
    // subnormals. Sums of the float32 terms are taken in float64 (exact enough to ignore).
    fc.assert(
      fc.property(bitsArb, fc.nat(0xffffffff), fc.constantFrom(0.05, 0.5, 3), (bits, seed, clip) => {
        const next = rng(seed);
        const n = 32;
        let residual: Float32Array | null = null;
        const sent = new Float64Array(n);
        const total = new Float64Array(n);
        const tol = new Float64Array(n).fill(50 * 2 ** -140);
        for (let t = 0; t < 50; t++) {
          const update = randomUpdate(next, n, 1); // often beyond clip 0.05 and 0.5: clipping feeds back too
          const u = residual === null ? update : update.map((x, i) => f(x + residual![i]!));
          const r = quantize(update, residual, { bits, clip, seed: { key0: seed, key1: t }, counterBase: 0 });
          const values = dequantize(r.levels, bits, clip);
          for (let i = 0; i < n; i++) {
            sent[i]! += values[i]!;
            total[i]! += update[i]!;
            tol[i]! += 2 ** -23 * (Math.abs(u[i]!) + Math.abs(r.residual[i]!));
          }
          residual = r.residual;
        }
        for (let i = 0; i < n; i++) {
          expect(Math.abs(sent[i]! + residual![i]! - total[i]!)).toBeLessThanOrEqual(tol[i]!);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('dequantizeSum stays within sumErrorBound of Σ_k clamp(u_k)', () => {
    fc.assert(
      fc.property(
        bitsArb,
        fc.integer({ min: 1, max: 12 }),
        fc.double({ min: 1e-6, max: 1e6, noNaN: true }),
        fc.nat(0xffffffff),
        (bits, k, clip, seed) => {
          const next = rng(seed);
          const n = 16;
          const sums = new Float64Array(n);
          const exact = new Float64Array(n);
          const c = f(clip);
          for (let site = 0; site < k; site++) {
            const update = randomUpdate(next, n, c * 1.5);
            const r = quantize(update, null, { bits, clip, seed: { key0: seed, key1: site } });
            for (let i = 0; i < n; i++) {
              sums[i]! += r.levels[i]!;
              exact[i]! += Math.min(Math.max(update[i]!, -c), c);
            }
          }
          const got = dequantizeSum(sums, k, bits, clip);
          const bound = sumErrorBound(bits, clip, k);
          for (let i = 0; i < n; i++) expect(Math.abs(got[i]! - exact[i]!)).toBeLessThanOrEqual(bound);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('quantize: buffers', () => {
  const next = rng(99);
  const update = randomUpdate(next, 500, 2);
  const residual = randomUpdate(next, 500, 0.1);
  const params = { bits: 4 as const, clip: 1, seed: SEED };

  it('writes into caller-provided outputs and returns them', () => {
    const ref = quantize(update, residual, params);
    const levels = new Uint8Array(500);
    const out = new Float32Array(500);
    const r = quantize(update, residual, params, { levels, residual: out });
    expect(r.levels).toBe(levels);
    expect(r.residual).toBe(out);
    expect(levels).toEqual(ref.levels);
    expect(out).toEqual(ref.residual);
  });

  it('may update the residual in place', () => {
    const ref = quantize(update, residual, params);
    const inPlace = residual.slice();
    const r = quantize(update, inPlace, params, { residual: inPlace });
    expect(r.residual).toBe(inPlace);
    expect(inPlace).toEqual(ref.residual);
    expect(r.levels).toEqual(ref.levels);
  });

  it('refuses partially overlapping outputs', () => {
    const buf = new Float32Array(1000);
    const a = buf.subarray(0, 500);
    const b = buf.subarray(1, 501);
    expect(() => quantize(a, null, params, { residual: b })).toThrow(/overlaps update/);
    const bytes = new Uint8Array(a.buffer, 0, 500);
    expect(() => quantize(a, null, params, { levels: bytes })).toThrow(/out.levels overlaps update/);
  });

  it('does not modify its inputs', () => {
    const u = update.slice();
    const e = residual.slice();
    quantize(u, e, params);
    expect(u).toEqual(update);
    expect(e).toEqual(residual);
  });
});

describe('quantize: validation', () => {
  const p = { bits: 8 as const, clip: 1, seed: SEED };

  function catchError(fn: () => unknown): unknown {
    try {
      fn();
    } catch (err) {
      return err;
    }
    throw new Error('expected a throw');
  }

  it('rejects NaN and ±Infinity with UPDATE_NON_FINITE naming the index', () => {
    const u = new Float32Array(10);
    u[3] = Number.NaN;
    const e1 = catchError(() => quantize(u, null, p));
    expect(e1).toBeInstanceOf(UpdateError);
    expect((e1 as UpdateError).code).toBe('UPDATE_NON_FINITE');
    expect((e1 as UpdateError).message).toMatch(/update\[3\]/);
    expect((e1 as UpdateError).details['index']).toBe(3);

    const r = new Float32Array(10);
    r[7] = Number.NEGATIVE_INFINITY;
    const e2 = catchError(() => quantize(new Float32Array(10), r, p));
    expect((e2 as UpdateError).code).toBe('UPDATE_NON_FINITE');
    expect((e2 as UpdateError).message).toMatch(/residual\[7\]/);

    const u2 = new Float32Array(10);
    u2[5] = Number.POSITIVE_INFINITY;
    const e3 = catchError(() => quantize(u2, r, p));
    expect((e3 as UpdateError).message).toMatch(/update\[5\]/);
  });

  it('rejects a float32 overflow of update + residual before writing anything', () => {
    const u = Float32Array.of(0.5, 3e38, 0.25);
    const r = Float32Array.of(0.1, 3e38, 0.1);
    const before = r.slice();
    const err = catchError(() => quantize(u, r, p, { residual: r }));
    expect((err as UpdateError).code).toBe('UPDATE_NON_FINITE');
    expect((err as UpdateError).message).toMatch(/update\[1\] \+ residual\[1\]/);
    expect(r).toEqual(before);
  });

  it('names both lengths when they differ', () => {
    expect(() => quantize(new Float32Array(4), new Float32Array(3), p)).toThrow(
      /residual length 3, but update length is 4/,
    );
    expect(() => quantize(new Float32Array(4), null, p, { levels: new Uint8Array(5) })).toThrow(
      /out.levels length 5, but update length is 4/,
    );
    expect(() => quantize(new Float32Array(4), null, p, { residual: new Float32Array(2) })).toThrow(
      /out.residual length 2, but update length is 4/,
    );
  });

  it('rejects bad seeds, counterBase, bits and clip', () => {
    const x = new Float32Array(2);
    expect(() => quantize(x, null, { ...p, seed: { key0: -1, key1: 0 } })).toThrow(/seed.key0/);
    expect(() => quantize(x, null, { ...p, seed: { key0: 0, key1: 2 ** 32 } })).toThrow(/seed.key1/);
    expect(() => quantize(x, null, { ...p, seed: { key0: 0.5, key1: 0 } })).toThrow(InvalidArgumentError);
    expect(() => quantize(x, null, { ...p, counterBase: -1 })).toThrow(/counterBase/);
    expect(() => quantize(x, null, { ...p, bits: 3 as QuantBits })).toThrow(/bits/);
    expect(() => quantize(x, null, { ...p, clip: Number.NaN })).toThrow(/clip/);
    expect(() => quantize(x, null, { ...p, clip: -2 })).toThrow(/clip/);
  });
});

describe('dequantize and dequantizeSum', () => {
  it('rejects levels above 2^b − 1, naming the index', () => {
    expect(() => dequantize(Uint8Array.of(0, 1, 4), 2, 1)).toThrow(/levels\[2\]/);
  });

  it('dequantizeSum = −K·clip + S·Δ (bits 2, clip 1.5, K 3)', () => {
    expect(Array.from(dequantizeSum([0, 9, 4, 5], 3, 2, 1.5))).toEqual([-4.5, 4.5, -0.5, 0.5]);
  });

  it('dequantizeSum agrees with summing dequantize within float rounding', () => {
    const next = rng(5);
    for (const bits of QUANT_BITS) {
      const clip = 0.37;
      const sums = new Float64Array(100);
      const bySite = new Float64Array(100);
      for (let k = 0; k < 5; k++) {
        const r = quantize(randomUpdate(next, 100, 0.5), null, { bits, clip, seed: { key0: 1, key1: k } });
        const v = dequantize(r.levels, bits, clip);
        for (let i = 0; i < 100; i++) {
          sums[i]! += r.levels[i]!;
          bySite[i]! += v[i]!;
        }
      }
      const got = dequantizeSum(sums, 5, bits, clip);
      for (let i = 0; i < 100; i++)
        expect(Math.abs(got[i]! - bySite[i]!)).toBeLessThanOrEqual(5 * clip * 2 ** -21);
    }
  });

  it('rejects sums outside [0, K·(2^b − 1)] and bad contributor counts', () => {
    expect(() => dequantizeSum([0, 10], 3, 2, 1)).toThrow(/levelSums\[1\]/);
    expect(() => dequantizeSum([0, 1.5], 3, 2, 1)).toThrow(/levelSums\[1\]/);
    expect(() => dequantizeSum([-1], 3, 2, 1)).toThrow(/levelSums\[0\]/);
    expect(() => dequantizeSum([Number.NaN], 3, 2, 1)).toThrow(/levelSums\[0\]/);
    expect(() => dequantizeSum([0], 0, 2, 1)).toThrow(/contributors/);
  });

  it('sumErrorBound is K·Δ plus float slack', () => {
    expect(sumErrorBound(2, 1.5, 4)).toBe(4 * 1 + 4 * 1.5 * 2 ** -21);
    expect(() => sumErrorBound(2, 1.5, 0)).toThrow(/contributors/);
  });
});
