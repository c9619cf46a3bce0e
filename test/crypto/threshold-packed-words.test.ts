import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { packedBytes, packWords, type RnsShape, unpackWords } from '../../crypto/threshold/index.ts';

// A small shape with two 60-bit primes (SEAL's first two for N = 8192 and [60, 60, 60]).
const shape: RnsShape = { n: 8, moduli: [1152921504606830593n, 1152921504606748673n] };

const polys = fc
  .tuple(...Array.from({ length: 16 }, (_, k) => fc.bigInt({ min: 0n, max: shape.moduli[k >> 3]! - 1n })))
  .map((ws) => BigUint64Array.from(ws));

describe('packed words', () => {
  it('unpack(pack(p)) = p for every polynomial below its primes, in 15 bytes a pair of words', () => {
    fc.assert(
      fc.property(polys, (p) => {
        const bytes = packWords(shape, p);
        expect(bytes.length).toBe(packedBytes(shape));
        expect(bytes.length).toBe(16 * 7.5);
        expect(unpackWords(shape, bytes)).toEqual(p);
      }),
    );
  });

  it('refuses a payload of another length, or one whose word is not below its prime', () => {
    fc.assert(
      fc.property(polys, fc.nat(15), (p, k) => {
        const bytes = packWords(shape, p);
        expect(() => unpackWords(shape, bytes.subarray(1))).toThrow(/120/);
        const bad = p.slice();
        bad[k] = shape.moduli[k >> 3]!;
        // Neither end lets a word at its prime through: packed, it would spill into its neighbour.
        expect(() => packWords(shape, bad)).toThrow(new RegExp(`word ${k} is not below`));
        const forged = packWords(shape, p);
        forged.set(packWords({ n: 8, moduli: [2n ** 60n, 2n ** 60n] }, bad));
        expect(() => unpackWords(shape, forged)).toThrow(new RegExp(`word ${k} is not below`));
      }),
    );
  });
});
