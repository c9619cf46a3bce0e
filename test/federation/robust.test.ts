import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assertRobustRule,
  clipToL2Norm,
  coordinateMedian,
  l2Norm,
  multiKrum,
  type RobustRule,
  robustAggregate,
  trimCount,
  trimmedMean,
} from '../../federation/index.ts';
import { InvalidArgumentError, UpdateError } from '../../src/errors/index.ts';

const f = Math.fround;
const f32 = (values: number[]): Float32Array => Float32Array.from(values);
const rows = (updates: Float32Array[]): number[][] => updates.map((u) => Array.from(u));

/** Float32 values, finite, including ±0, subnormals and magnitudes up to 3.4e38. */
const value32 = fc.float({ noNaN: true, noDefaultInfinity: true });

/** n updates of length d, with a permutation of their indices. */
const updatesWithPermutation = fc
  .record({ n: fc.integer({ min: 1, max: 9 }), d: fc.integer({ min: 1, max: 6 }) })
  .chain(({ n, d }) =>
    fc.record({
      updates: fc.array(fc.array(value32, { minLength: d, maxLength: d }), { minLength: n, maxLength: n }),
      order: fc.shuffledSubarray(
        Array.from({ length: n }, (_, i) => i),
        { minLength: n, maxLength: n },
      ),
    }),
  );

function expectWithinColumnRange(out: Float32Array, updates: number[][]): void {
  out.forEach((x, i) => {
    const column = updates.map((u) => u[i]!);
    expect(x).toBeGreaterThanOrEqual(Math.min(...column));
    expect(x).toBeLessThanOrEqual(Math.max(...column));
  });
}

describe('l2Norm and clipToL2Norm', () => {
  it('computes the Euclidean norm', () => {
    expect(l2Norm(f32([3, 4]))).toBe(5); // √(9 + 16)
    expect(l2Norm(f32([1, -2, 2]))).toBe(3); // √(1 + 4 + 4)
    expect(l2Norm(new Float32Array(0))).toBe(0);
  });

  it('scales a vector outside the ball onto it and copies one inside', () => {
    // ‖[3, 4]‖ = 5 > 2.5: factor 2.5 / 5 = 0.5 → [1.5, 2], norm exactly 2.5
    const v = f32([3, 4]);
    const out = clipToL2Norm(v, 2.5);
    expect(Array.from(out.clipped)).toEqual([1.5, 2]);
    expect(out).toMatchObject({ norm: 5, scaled: true });
    expect(Array.from(v)).toEqual([3, 4]);
    // ‖[3, 4]‖ = 5 ≤ 10 (and = 5): unchanged, but a fresh array
    for (const bound of [10, 5]) {
      const inside = clipToL2Norm(v, bound);
      expect(inside).toMatchObject({ norm: 5, scaled: false });
      expect(Array.from(inside.clipped)).toEqual([3, 4]);
      expect(inside.clipped).not.toBe(v);
    }
    // norm 0 → unchanged copy
    expect(clipToL2Norm(f32([0, 0]), 1)).toMatchObject({ norm: 0, scaled: false });
  });

  it('never leaves the norm above the bound through float32 rounding', () => {
    // [3, 4]·(1/5) rounds to f32 [0.6, 0.8] = [0.60000002384…, 0.80000001192…], whose norm² is
    // 0.3600000286… + 0.6400000190… = 1.0000000476… > 1: naive clipping overshoots the bound.
    expect(l2Norm(f32([0.6, 0.8]))).toBeGreaterThan(1);
    const { clipped, scaled } = clipToL2Norm(f32([3, 4]), 1);
    expect(scaled).toBe(true);
    expect(l2Norm(clipped)).toBeLessThanOrEqual(1);
    expect(clipped[0]).toBeCloseTo(0.6, 6);
    expect(clipped[1]).toBeCloseTo(0.8, 6);
  });

  it('rejects a bad bound or a non-finite value, naming them', () => {
    for (const bound of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => clipToL2Norm(f32([1]), bound)).toThrow(`bound is ${bound}, must be finite and > 0`);
    }
    expect(() => clipToL2Norm(f32([1]), '1' as unknown as number)).toThrow(InvalidArgumentError);
    expect(() => clipToL2Norm(f32([1, Number.NaN]), 1)).toThrow(/v\[1\] is NaN/);
    expect(() => l2Norm(f32([0, 0, Number.NEGATIVE_INFINITY]))).toThrow(UpdateError);
    expect(() => l2Norm(f32([0, 0, Number.NEGATIVE_INFINITY]))).toThrow(/v\[2\] is -Infinity/);
    expect(() => l2Norm([1, 2] as unknown as Float32Array)).toThrow('v must be a Float32Array');
  });

  it('property: the clipped norm is ≤ bound, the direction is kept, inputs inside are copied', () => {
    fc.assert(
      fc.property(
        fc.float32Array({ noNaN: true, noDefaultInfinity: true, minLength: 1, maxLength: 20 }),
        fc.double({ min: 1e-3, max: 1e3, noNaN: true }),
        (v, bound) => {
          const before = Array.from(v);
          const norm = l2Norm(v);
          const out = clipToL2Norm(v, bound);
          expect(Array.from(v)).toEqual(before);
          expect(out.norm).toBe(norm);
          expect(out.scaled).toBe(norm > bound);
          expect(l2Norm(out.clipped)).toBeLessThanOrEqual(bound * (1 + 1e-6));
          if (!out.scaled) {
            expect(Array.from(out.clipped)).toEqual(before);
          } else {
            expect(l2Norm(out.clipped)).toBeLessThanOrEqual(bound);
            out.clipped.forEach((x, i) => {
              expect(Math.abs(x - (before[i]! * bound) / norm)).toBeLessThanOrEqual(1e-6 * bound + 1e-44);
            });
          }
        },
      ),
    );
  });
});

describe('coordinateMedian', () => {
  it('takes the middle value per coordinate (odd n)', () => {
    // coordinate 0: sorted [−4, 1, 3] → 1; coordinate 1: [−2, 0, 8] → 0; coordinate 2: [0.25, 0.5, 100] → 0.5
    const updates = [f32([1, -2, 0.5]), f32([3, 8, 0.25]), f32([-4, 0, 100])];
    expect(Array.from(coordinateMedian(updates))).toEqual([1, 0, 0.5]);
  });

  it('averages the two middle values (even n)', () => {
    // coordinate 0: [−4, 1, 2, 3] → (1 + 2)/2 = 1.5; 1: [−2, 0, 1, 8] → (0 + 1)/2 = 0.5;
    // 2: [−1, 0.25, 0.5, 100] → (0.25 + 0.5)/2 = 0.375
    const updates = [f32([1, -2, 0.5]), f32([3, 8, 0.25]), f32([-4, 0, 100]), f32([2, 1, -1])];
    expect(Array.from(coordinateMedian(updates))).toEqual([1.5, 0.5, 0.375]);
    // one update: itself; two: their mean, (1 + 2)/2 and (−3 + 0)/2
    expect(Array.from(coordinateMedian([f32([7, -3])]))).toEqual([7, -3]);
    expect(Array.from(coordinateMedian([f32([1, -3]), f32([2, 0])]))).toEqual([1.5, -1.5]);
  });

  it('rejects bad inputs, naming them', () => {
    expect(() => coordinateMedian([])).toThrow('updates must hold at least one update');
    expect(() => coordinateMedian([f32([1, 2]), f32([1])])).toThrow(
      'updates[1] length 1, updates[0] length 2',
    );
    expect(() => coordinateMedian([f32([1]), [1] as unknown as Float32Array])).toThrow(
      'updates[1] must be a Float32Array',
    );
    expect(() => coordinateMedian([f32([1, 2]), f32([1, Number.NaN])])).toThrow(/updates\[1\]\[1\] is NaN/);
  });

  it('property: permutation-invariant, within each coordinate’s min and max, never −0', () => {
    fc.assert(
      fc.property(updatesWithPermutation, ({ updates, order }) => {
        const out = coordinateMedian(updates.map(f32));
        const permuted = coordinateMedian(order.map((k) => f32(updates[k]!)));
        expect(Array.from(permuted)).toEqual(Array.from(out));
        expectWithinColumnRange(out, rows(updates.map(f32)));
        for (const x of out) expect(Object.is(x, -0)).toBe(false);
      }),
    );
  });
});

describe('trimmedMean and trimCount', () => {
  // coordinate 0: [10, 1, 2, 3, −50]; coordinate 1: [0.5, 0.25, 1000, −0.75, 0]
  const updates = [f32([10, 0.5]), f32([1, 0.25]), f32([2, 1000]), f32([3, -0.75]), f32([-50, 0])];

  it('drops trimPerSide values from each end and averages the rest', () => {
    // t = 1: 0: sorted [−50, 1, 2, 3, 10] → (1 + 2 + 3)/3 = 2; 1: [−0.75, 0, 0.25, 0.5, 1000] → (0 + 0.25 + 0.5)/3 = 0.25
    expect(Array.from(trimmedMean(updates, 1))).toEqual([2, 0.25]);
    // t = 2: the median, 2 and 0.25
    expect(Array.from(trimmedMean(updates, 2))).toEqual([2, 0.25]);
    // t = 0: the mean, (10 + 1 + 2 + 3 − 50)/5 = −34/5 and (0.5 + 0.25 + 1000 − 0.75 + 0)/5 = 200
    expect(Array.from(trimmedMean(updates, 0))).toEqual([f(-34 / 5), 200]);
  });

  it('rejects a trim that leaves nothing, naming both numbers', () => {
    expect(() => trimmedMean(updates, 3)).toThrow(
      'trimPerSide 3 would drop 6 of 5 updates; need 2·trimPerSide < n',
    );
    expect(() => trimmedMean(updates.slice(0, 4), 2)).toThrow('trimPerSide 2 would drop 4 of 4 updates');
    expect(() => trimmedMean(updates, 1.5)).toThrow(/trimPerSide must be an integer/);
    expect(() => trimmedMean(updates, -1)).toThrow(/trimPerSide must be an integer/);
    expect(() => trimmedMean([], 0)).toThrow('updates must hold at least one update');
  });

  it('trimCount is ⌊fraction·n⌋', () => {
    expect(trimCount(10, 0.2)).toBe(2); // ⌊2⌋
    expect(trimCount(10, 0.25)).toBe(2); // ⌊2.5⌋
    expect(trimCount(4, 0.49)).toBe(1); // ⌊1.96⌋
    expect(trimCount(1, 0.4)).toBe(0); // ⌊0.4⌋
    expect(trimCount(7, 0)).toBe(0);
    expect(() => trimCount(10, 0.5)).toThrow('fraction is 0.5, must be in [0, 0.5)');
    expect(() => trimCount(10, -0.1)).toThrow('fraction is -0.1, must be in [0, 0.5)');
    expect(() => trimCount(0, 0.1)).toThrow(/n must be an integer in \[1,/);
  });

  it('property: trimCount always keeps at least one value', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0, max: 0.5, maxExcluded: true, noNaN: true }),
        (n, fraction) => {
          const t = trimCount(n, fraction);
          expect(Number.isInteger(t) && t >= 0 && 2 * t < n).toBe(true);
          expect(t).toBe(Math.floor(fraction * n));
        },
      ),
    );
  });

  it('property: permutation-invariant and within each coordinate’s min and max', () => {
    fc.assert(
      fc.property(updatesWithPermutation, fc.nat(), ({ updates, order }, seed) => {
        const t = seed % Math.ceil(updates.length / 2);
        const out = trimmedMean(updates.map(f32), t);
        const permuted = trimmedMean(
          order.map((k) => f32(updates[k]!)),
          t,
        );
        expect(Array.from(permuted)).toEqual(Array.from(out));
        expectWithinColumnRange(out, rows(updates.map(f32)));
      }),
    );
  });
});

describe('multiKrum', () => {
  // Squared distances d_ij of u0 = [0, 0], u1 = [1, 0], u2 = [0, 1], u3 = [2, 2], u4 = [10, 10]:
  //   d01 = 1, d02 = 1, d03 = 8, d04 = 200, d12 = 2, d13 = 5, d14 = 81 + 100 = 181,
  //   d23 = 5, d24 = 181, d34 = 64 + 64 = 128.
  // n = 5, f = 1: each score sums the n − f − 2 = 2 smallest distances to the others:
  //   s0 = 1 + 1 = 2, s1 = 1 + 2 = 3, s2 = 1 + 2 = 3, s3 = 5 + 5 = 10, s4 = 128 + 181 = 309.
  const updates = [f32([0, 0]), f32([1, 0]), f32([0, 1]), f32([2, 2]), f32([10, 10])];

  it('scores by the nearest n − f − 2 neighbours and averages the m best (hand-computed)', () => {
    const out = multiKrum(updates, { byzantine: 1 });
    expect(out.scores).toEqual([2, 3, 3, 10, 309]);
    // m = n − f = 4: u0..u3, mean [(0 + 1 + 0 + 2)/4, (0 + 0 + 1 + 2)/4] = [0.75, 0.75]
    expect(out.selected).toEqual([0, 1, 2, 3]);
    expect(Array.from(out.mean)).toEqual([0.75, 0.75]);
  });

  it('m = 1 is Krum; ties go to the lower index', () => {
    const krum = multiKrum(updates, { byzantine: 1, select: 1 });
    expect(krum.selected).toEqual([0]);
    expect(Array.from(krum.mean)).toEqual([0, 0]);
    // s1 = s2 = 3: m = 2 takes u0 and u1 (lower index), mean [0.5, 0]
    const two = multiKrum(updates, { byzantine: 1, select: 2 });
    expect(two.selected).toEqual([0, 1]);
    expect(Array.from(two.mean)).toEqual([0.5, 0]);
    // f = 0: 3 nearest; s4 = 128 + 181 + 181 = 490 is the largest, m = 5 takes everything
    const all = multiKrum(updates, { byzantine: 0 });
    expect(all.scores[4]).toBe(490);
    expect(all.selected).toEqual([0, 1, 2, 3, 4]);
  });

  it('sums distances across the 2,048-coordinate blocks', () => {
    // Constant updates c_k·1 of d = 4,097 = 2·2,048 + 1 coordinates, c = [0, 1, 3, 6, 50]:
    // d_ij = 4097·(c_i − c_j)²; 1-D distances 01 = 1, 02 = 9, 03 = 36, 04 = 2500, 12 = 4, 13 = 25,
    // 14 = 2401, 23 = 9, 24 = 2209, 34 = 1936; two nearest: s = [1 + 9, 1 + 4, 4 + 9, 9 + 25, 1936 + 2209].
    const c = [0, 1, 3, 6, 50];
    const out = multiKrum(
      c.map((x) => new Float32Array(4097).fill(x)),
      { byzantine: 1 },
    );
    expect(out.scores).toEqual([10, 5, 13, 34, 4145].map((s) => 4097 * s));
    expect(out.selected).toEqual([0, 1, 2, 3]);
    expect(out.mean.every((x) => x === 2.5)).toBe(true); // (0 + 1 + 3 + 6)/4
  });

  it('rejects too few updates and bad options, naming the numbers', () => {
    expect(() => multiKrum(updates.slice(0, 4), { byzantine: 1 })).toThrow(
      'Multi-Krum needs n > 2f + 2 updates: n = 4, f = 1, 2f + 2 = 4',
    );
    expect(() => multiKrum(updates, { byzantine: 2 })).toThrow('n = 5, f = 2, 2f + 2 = 6');
    expect(() => multiKrum(updates, { byzantine: -1 })).toThrow(/byzantine must be an integer/);
    expect(() => multiKrum(updates, { byzantine: 1, select: 0 })).toThrow(
      'select must be an integer in [1, 5], got 0',
    );
    expect(() => multiKrum(updates, { byzantine: 1, select: 6 })).toThrow(
      'select must be an integer in [1, 5], got 6',
    );
    expect(() => multiKrum(updates, null as unknown as { byzantine: number })).toThrow(/options must be/);
  });

  it('property: with n > 2f + 2, Byzantine updates far from the honest ones are never selected', () => {
    const arb = fc
      .record({
        f: fc.integer({ min: 0, max: 3 }),
        extra: fc.integer({ min: 0, max: 4 }),
        d: fc.integer({ min: 1, max: 8 }),
        collude: fc.boolean(),
      })
      .chain(({ f: byz, extra, d, collude }) => {
        const n = 2 * byz + 3 + extra;
        const honest = fc.array(
          fc.array(fc.float({ min: -1, max: 1, noNaN: true }), { minLength: d, maxLength: d }),
          {
            minLength: n - byz,
            maxLength: n - byz,
          },
        );
        // Far: coordinate 0 at |x| ≥ 100, so a Byzantine update is ≥ 99 from every honest one.
        const far = fc.tuple(
          fc.float({ min: 100, max: 1e6, noNaN: true }),
          fc.boolean(),
          fc.array(fc.float({ min: -1e6, max: 1e6, noNaN: true }), { minLength: d - 1, maxLength: d - 1 }),
        );
        return fc.record({
          byz: fc.constant(byz),
          honest,
          byzantine: fc.array(far, { minLength: byz, maxLength: byz }),
          collude: fc.constant(collude),
          order: fc.shuffledSubarray(
            Array.from({ length: n }, (_, i) => i),
            { minLength: n, maxLength: n },
          ),
        });
      });
    fc.assert(
      fc.property(arb, ({ byz, honest, byzantine, collude, order }) => {
        const bad = byzantine.map(([x, negative, rest]) => [negative ? -x : x, ...rest]);
        if (collude) bad.fill(bad[0]!); // identical Byzantine updates are distance 0 from each other
        const pool = [...honest, ...bad]; // pool index ≥ honest.length is Byzantine
        const updates = order.map((k) => f32(pool[k]!));
        const honestIndices = order.flatMap((k, i) => (k < honest.length ? [i] : []));
        const out = multiKrum(updates, { byzantine: byz });
        expect(out.selected).toEqual(honestIndices);
      }),
    );
  });
});

describe('robustAggregate', () => {
  const median = [f32([1, -2, 0.5]), f32([3, 8, 0.25]), f32([-4, 0, 100])];

  it('mean is the unweighted mean of all updates', () => {
    // [(1 + 3 + 5)/3, (2 + 4 − 6)/3] = [3, 0]
    const out = robustAggregate([f32([1, 2]), f32([3, 4]), f32([5, -6])], { name: 'mean' });
    expect(Array.from(out.mean)).toEqual([3, 0]);
    expect(out.selected).toEqual([0, 1, 2]);
    expect(out.clippedCount).toBe(0);
  });

  it('dispatches median, trimmed mean and Multi-Krum', () => {
    expect(Array.from(robustAggregate(median, { name: 'median' }).mean)).toEqual([1, 0, 0.5]);
    // trimFraction 0.2 of 5 → trim 1 per side (fixture of the trimmed-mean tests)
    const trimmed = [f32([10, 0.5]), f32([1, 0.25]), f32([2, 1000]), f32([3, -0.75]), f32([-50, 0])];
    const t = robustAggregate(trimmed, { name: 'trimmed-mean', trimFraction: 0.2 });
    expect(Array.from(t.mean)).toEqual([2, 0.25]);
    expect(t.selected).toEqual([0, 1, 2, 3, 4]);
    // trimFraction 0.1 of 5 → ⌊0.5⌋ = 0: the mean
    expect(Array.from(robustAggregate(trimmed, { name: 'trimmed-mean', trimFraction: 0.1 }).mean)).toEqual([
      f(-34 / 5),
      200,
    ]);
    // Multi-Krum fixture above: u4 = [10, 10] is dropped
    const krum = [f32([0, 0]), f32([1, 0]), f32([0, 1]), f32([2, 2]), f32([10, 10])];
    const k = robustAggregate(krum, { name: 'multi-krum', byzantine: 1 });
    expect(k.selected).toEqual([0, 1, 2, 3]);
    expect(Array.from(k.mean)).toEqual([0.75, 0.75]);
    expect(robustAggregate(krum, { name: 'multi-krum', byzantine: 1, select: 1 }).selected).toEqual([0]);
  });

  it('normBound scales each update outside the ball first', () => {
    // ‖[3, 4]‖ = 5 > 2.5 → [1.5, 2]; ‖[0, 1]‖ = 1 ≤ 2.5 stays; mean [(1.5 + 0)/2, (2 + 1)/2] = [0.75, 1.5]
    const updates = [f32([3, 4]), f32([0, 1])];
    const out = robustAggregate(updates, { name: 'mean', normBound: 2.5 });
    expect(Array.from(out.mean)).toEqual([0.75, 1.5]);
    expect(out.clippedCount).toBe(1);
    expect(rows(updates)).toEqual([
      [3, 4],
      [0, 1],
    ]);
    // Without the bound: [1.5, 2.5]
    expect(Array.from(robustAggregate(updates, { name: 'mean' }).mean)).toEqual([1.5, 2.5]);
    // Median of [1.5, 2] (clipped), [0, 1] and [0, 0]: sorted [0, 0, 1.5] → 0 and [0, 1, 2] → 1
    const med = robustAggregate([...updates, f32([0, 0])], { name: 'median', normBound: 2.5 });
    expect(Array.from(med.mean)).toEqual([0, 1]);
    expect(med.clippedCount).toBe(1);
    // bound 0.5 < ‖[0, 1]‖ = 1: both are scaled
    expect(robustAggregate(updates, { name: 'median', normBound: 0.5 }).clippedCount).toBe(2);
  });

  it('rejects bad rules naming the field, and bad updates naming the index', () => {
    const u = [f32([1]), f32([2])];
    const bad: [unknown, string | RegExp][] = [
      [null, 'rule must be a robust rule object, got null'],
      [{ name: 'krum' }, 'rule.name is "krum", must be one of mean, median, trimmed-mean, multi-krum'],
      [{ name: 'median', trimFraction: 0.1 }, 'rule.trimFraction does not apply to median'],
      [{ name: 'trimmed-mean' }, 'rule.trimFraction must be in [0, 0.5), got undefined'],
      [{ name: 'trimmed-mean', trimFraction: 0.5 }, 'rule.trimFraction must be in [0, 0.5), got 0.5'],
      [{ name: 'multi-krum' }, 'rule.byzantine must be an integer ≥ 0, got undefined'],
      [{ name: 'multi-krum', byzantine: 1.5 }, 'rule.byzantine must be an integer ≥ 0, got 1.5'],
      [{ name: 'multi-krum', byzantine: 0, select: 0 }, 'rule.select must be an integer ≥ 1, got 0'],
      [{ name: 'mean', normBound: 0 }, 'rule.normBound must be finite and > 0, got 0'],
      [{ name: 'mean', normBound: Number.POSITIVE_INFINITY }, 'rule.normBound must be finite and > 0'],
    ];
    for (const [rule, message] of bad) {
      expect(() => assertRobustRule(rule)).toThrow(message);
      expect(() => robustAggregate(u, rule as RobustRule)).toThrow(message);
    }
    assertRobustRule({ name: 'multi-krum', byzantine: 0, select: undefined, normBound: 1 });
    expect(() => robustAggregate([], { name: 'mean' })).toThrow('updates must hold at least one update');
    expect(() => robustAggregate([f32([1, 2]), f32([1])], { name: 'median' })).toThrow(
      'updates[1] length 1, updates[0] length 2',
    );
    expect(() => robustAggregate([f32([1]), f32([Number.NaN])], { name: 'mean', normBound: 1 })).toThrow(
      /updates\[1\]\[0\] is NaN/,
    );
    expect(() => robustAggregate(u, { name: 'multi-krum', byzantine: 0 })).toThrow(
      'Multi-Krum needs n > 2f + 2 updates: n = 2, f = 0, 2f + 2 = 2',
    );
  });
});
