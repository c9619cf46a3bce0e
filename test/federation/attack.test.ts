import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ATTACK_DEFAULT_FACTORS,
  type AttackConfig,
  assertAttackConfig,
  attackFactor,
  attackingSites,
  flipLabels,
  poisonUpdate,
  RANDOM_STREAMS,
} from '../../federation/index.ts';
import { InvalidArgumentError, UpdateError } from '../../src/errors/index.ts';

const f32 = (values: number[]): Float32Array => Float32Array.from(values);

describe('assertAttackConfig and attackFactor', () => {
  it('accepts valid configurations and fills the default factors', () => {
    for (const attack of [
      { kind: 'sign-flip', fraction: 0 },
      { kind: 'scaling', fraction: 1, factor: 2.5 },
      { kind: 'label-flip', fraction: 0.3, factor: undefined },
    ]) {
      expect(() => assertAttackConfig(attack)).not.toThrow();
    }
    expect(attackFactor({ kind: 'sign-flip', fraction: 0.1 })).toBe(1);
    expect(attackFactor({ kind: 'scaling', fraction: 0.1 })).toBe(10);
    expect(attackFactor({ kind: 'scaling', fraction: 0.1, factor: 3 })).toBe(3);
    expect(ATTACK_DEFAULT_FACTORS).toEqual({ 'sign-flip': 1, scaling: 10 });
  });

  it('rejects bad configurations, naming the field', () => {
    const bad: [unknown, string][] = [
      [undefined, 'attack must be an attack configuration object, got undefined'],
      [
        { kind: 'noise', fraction: 0.1 },
        'attack.kind is "noise", must be one of sign-flip, scaling, label-flip',
      ],
      [{ kind: 'sign-flip' }, 'attack.fraction must be in [0, 1], got undefined'],
      [{ kind: 'sign-flip', fraction: 1.5 }, 'attack.fraction must be in [0, 1], got 1.5'],
      [{ kind: 'sign-flip', fraction: -0.1 }, 'attack.fraction must be in [0, 1], got -0.1'],
      [{ kind: 'sign-flip', fraction: Number.NaN }, 'attack.fraction must be in [0, 1], got NaN'],
      [{ kind: 'scaling', fraction: 0.1, factor: 0 }, 'attack.factor must be finite and > 0, got 0'],
      [{ kind: 'scaling', fraction: 0.1, factor: -2 }, 'attack.factor must be finite and > 0, got -2'],
      [
        { kind: 'scaling', fraction: 0.1, factor: Number.POSITIVE_INFINITY },
        'attack.factor must be finite and > 0, got Infinity',
      ],
      [{ kind: 'label-flip', fraction: 0.1, factor: 2 }, 'attack.factor does not apply to label-flip'],
      [{ kind: 'scaling', fraction: 0.1, target: 3 }, 'attack.target does not apply to scaling'],
    ];
    for (const [attack, message] of bad) {
      expect(() => assertAttackConfig(attack)).toThrow(InvalidArgumentError);
      expect(() => assertAttackConfig(attack)).toThrow(message);
    }
  });
});

describe('poisonUpdate', () => {
  const u = f32([1, -2, 0.5]);

  it('sign-flip sends −factor·u, scaling factor·u, label-flip u', () => {
    // −1·[1, −2, 0.5] = [−1, 2, −0.5]; −3·u = [−3, 6, −1.5]
    expect(Array.from(poisonUpdate(u, { kind: 'sign-flip', fraction: 0.2 }))).toEqual([-1, 2, -0.5]);
    expect(Array.from(poisonUpdate(u, { kind: 'sign-flip', fraction: 0.2, factor: 3 }))).toEqual([
      -3, 6, -1.5,
    ]);
    // 10·u = [10, −20, 5]; 0.5·u = [0.5, −1, 0.25]
    expect(Array.from(poisonUpdate(u, { kind: 'scaling', fraction: 0.2 }))).toEqual([10, -20, 5]);
    expect(Array.from(poisonUpdate(u, { kind: 'scaling', fraction: 0.2, factor: 0.5 }))).toEqual([
      0.5, -1, 0.25,
    ]);
    const copy = poisonUpdate(u, { kind: 'label-flip', fraction: 0.2 });
    expect(Array.from(copy)).toEqual([1, -2, 0.5]);
    expect(copy).not.toBe(u);
    expect(Array.from(u)).toEqual([1, -2, 0.5]);
  });

  it('rejects non-finite input or output and a bad configuration', () => {
    expect(() => poisonUpdate(f32([0, Number.NaN]), { kind: 'scaling', fraction: 1 })).toThrow(
      /update\[1\] is NaN/,
    );
    // 10 · 3e38 overflows float32
    expect(() => poisonUpdate(f32([1, 3e38]), { kind: 'scaling', fraction: 1 })).toThrow(UpdateError);
    expect(() => poisonUpdate(f32([1, 3e38]), { kind: 'scaling', fraction: 1 })).toThrow(
      /poisoned update\[1\] is Infinity/,
    );
    expect(() => poisonUpdate([1] as unknown as Float32Array, { kind: 'scaling', fraction: 1 })).toThrow(
      'update must be a Float32Array',
    );
    expect(() => poisonUpdate(u, { kind: 'scaling', fraction: 2 } as AttackConfig)).toThrow(
      'attack.fraction must be in [0, 1], got 2',
    );
  });

  it('property: sign-flip with factor 1 is exact negation and undoes itself', () => {
    fc.assert(
      fc.property(fc.float32Array({ noNaN: true, noDefaultInfinity: true, maxLength: 16 }), (v) => {
        const attack: AttackConfig = { kind: 'sign-flip', fraction: 1 };
        const flipped = poisonUpdate(v, attack);
        expect(Array.from(flipped)).toEqual(Array.from(v, (x) => -x));
        expect(Array.from(poisonUpdate(flipped, attack))).toEqual(Array.from(v));
      }),
    );
  });
});

describe('flipLabels', () => {
  it('maps y to classCount − 1 − y, keeping the array type', () => {
    // 10 classes: 0 ↔ 9, 1 ↔ 8, 9 ↔ 0, 4 ↔ 5
    const labels = Uint8Array.from([0, 1, 9, 4]);
    const out = flipLabels(labels, 10);
    expect(out).toBeInstanceOf(Uint8Array);
    expect(Array.from(out)).toEqual([9, 8, 0, 5]);
    expect(Array.from(labels)).toEqual([0, 1, 9, 4]);
    // 3 classes: 0 ↔ 2, 1 stays
    const wide = flipLabels(Int32Array.from([0, 1, 2]), 3);
    expect(wide).toBeInstanceOf(Int32Array);
    expect(Array.from(wide)).toEqual([2, 1, 0]);
    expect(Array.from(flipLabels(Uint16Array.from([0]), 1))).toEqual([0]);
  });

  it('rejects labels out of range naming the index, and a bad classCount', () => {
    expect(() => flipLabels(Uint8Array.from([0, 10]), 10)).toThrow('labels[1] is 10, outside [0, 10)');
    expect(() => flipLabels(Int32Array.from([3, -1]), 10)).toThrow('labels[1] is -1, outside [0, 10)');
    expect(() => flipLabels(Uint8Array.from([0]), 0)).toThrow(/classCount must be an integer in \[1, 256\]/);
    expect(() => flipLabels([0, 1] as unknown as Uint8Array, 2)).toThrow(/labels must be a Uint8Array/);
  });

  it('property: an involution that stays in range', () => {
    const arb = fc.integer({ min: 1, max: 256 }).chain((k) =>
      fc.record({
        k: fc.constant(k),
        labels: fc.array(fc.integer({ min: 0, max: k - 1 }), { maxLength: 50 }),
      }),
    );
    fc.assert(
      fc.property(arb, ({ k, labels }) => {
        const y = Uint8Array.from(labels);
        const flipped = flipLabels(y, k);
        for (const x of flipped) expect(x).toBeLessThan(k);
        expect(Array.from(flipLabels(flipped, k))).toEqual(labels);
        if (k % 2 === 0) {
          flipped.forEach((x, i) => {
            expect(x).not.toBe(labels[i]);
          });
        }
      }),
    );
  });
});

describe('attackingSites', () => {
  it('picks exactly round(fraction·siteCount) sites', () => {
    // 0.3·10 = 3; 0·10 = 0; 1·10 = 10; 0.5·3 = 1.5 → 2; 0.2·7 = 1.4 → 1
    const cases: [number, number, number][] = [
      [10, 0.3, 3],
      [10, 0, 0],
      [10, 1, 10],
      [3, 0.5, 2],
      [7, 0.2, 1],
    ];
    for (const [sites, fraction, count] of cases) {
      const chosen = attackingSites(sites, fraction, 42);
      expect(chosen.size).toBe(count);
      for (const s of chosen) expect(Number.isInteger(s) && s >= 0 && s < sites).toBe(true);
      expect([...chosen]).toEqual([...chosen].sort((a, b) => a - b));
    }
    expect([...attackingSites(10, 1, 7)]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('is a pure function of the seed, on its own stream', () => {
    expect([...attackingSites(100, 0.2, 9)]).toEqual([...attackingSites(100, 0.2, 9)]);
    const distinct = new Set(
      Array.from({ length: 20 }, (_, seed) => [...attackingSites(100, 0.2, seed)].join()),
    );
    expect(distinct.size).toBeGreaterThan(1);
    expect(RANDOM_STREAMS.attackSites).toBe(0x5041_0020);
    const tags = Object.values(RANDOM_STREAMS);
    expect(new Set(tags).size).toBe(tags.length);
  });

  it('chooses every site about equally often over seeds', () => {
    // 2,000 seeds × 3 of 10 sites: each site is expected 600 times (σ = √(2000·0.3·0.7) ≈ 20.5);
    // ±100 is about 5σ. The seeds are fixed, so the outcome is deterministic.
    const counts = new Array<number>(10).fill(0);
    for (let seed = 0; seed < 2000; seed++) for (const s of attackingSites(10, 0.3, seed)) counts[s]!++;
    for (const c of counts) expect(Math.abs(c - 600)).toBeLessThan(100);
  });

  it('rejects bad arguments, naming them', () => {
    expect(() => attackingSites(0, 0.1, 1)).toThrow(/siteCount must be an integer in \[1,/);
    expect(() => attackingSites(10, 1.5, 1)).toThrow('fraction must be in [0, 1], got 1.5');
    expect(() => attackingSites(10, Number.NaN, 1)).toThrow('fraction must be in [0, 1], got NaN');
    expect(() => attackingSites(10, 0.1, -1)).toThrow(/seed must be an integer in \[0, 4294967295\]/);
  });

  it('property: size round(fraction·n), in range, deterministic', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.nat(0xffff_ffff),
        (n, fraction, seed) => {
          const a = attackingSites(n, fraction, seed);
          expect(a.size).toBe(Math.round(fraction * n));
          for (const s of a) expect(s >= 0 && s < n).toBe(true);
          expect([...attackingSites(n, fraction, seed)]).toEqual([...a]);
        },
      ),
    );
  });
});
