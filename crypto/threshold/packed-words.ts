import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { assertPoly, type RnsPoly, type RnsShape } from './rns-poly.ts';

/**
 * Polynomials on the wire: each word in 60 bits (every limb's prime is below 2^60), two words to
 * 15 bytes, little-endian, so a payload is 6.25% smaller than 64-bit words. Unpacking checks every
 * word against its limb's prime before anything adds it.
 */

const MASK60 = (1n << 60n) - 1n;

/** Bytes of one packed polynomial of `shape`. */
export function packedBytes(shape: RnsShape): number {
  return (shape.n * shape.moduli.length * 15) / 2;
}

/** Packs a polynomial's words at 60 bits each. */
export function packWords(shape: RnsShape, p: RnsPoly): Uint8Array {
  const words = shape.n * shape.moduli.length;
  if (p.length !== words)
    throw new InvalidArgumentError(`polynomial of ${p.length} words, expected ${words}`);
  // A word at or above its prime would spill into its neighbour's bits.
  assertPoly(shape, p, 'packed polynomial');
  // One spare byte: the second word of the last pair is written as a full 8-byte word.
  const out = new Uint8Array(packedBytes(shape) + 1);
  const view = new DataView(out.buffer);
  for (let k = 0, o = 0; k < words; k += 2, o += 15) {
    view.setBigUint64(o, p[k]!, true);
    view.setBigUint64(o + 7, (p[k + 1]! << 4n) | BigInt(out[o + 7]! & 0x0f), true);
  }
  return out.subarray(0, out.length - 1);
}

/**
 * Unpacks a payload written by {@link packWords}: refuses a wrong length or a word not below its
 * limb's prime (`CKKS_PARAMS_MISMATCH`, what a payload for other parameters is).
 */
export function unpackWords(shape: RnsShape, bytes: Uint8Array): RnsPoly {
  const expected = packedBytes(shape);
  if (!(bytes instanceof Uint8Array) || bytes.length !== expected) {
    throw new CryptoError(
      'CKKS_PARAMS_MISMATCH',
      `threshold payload of ${bytes?.length} bytes, these parameters make ${expected}`,
    );
  }
  const { n, moduli } = shape;
  const padded = new Uint8Array(expected + 1);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  const out = new BigUint64Array(n * moduli.length);
  for (let k = 0, o = 0; k < out.length; k += 2, o += 15) {
    out[k] = view.getBigUint64(o, true) & MASK60;
    out[k + 1] = view.getBigUint64(o + 7, true) >> 4n;
  }
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    for (let i = l * n, end = i + n; i < end; i++) {
      if (out[i]! >= q)
        throw new CryptoError(
          'CKKS_PARAMS_MISMATCH',
          `threshold payload word ${i} is not below limb ${l}'s prime`,
        );
    }
  }
  return out;
}
