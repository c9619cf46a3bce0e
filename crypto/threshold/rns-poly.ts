import { createHash, randomBytes } from 'node:crypto';
import { endianness } from 'node:os';
import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';

// Polynomials are handed to and from SEAL as raw little-endian 64-bit words.
if (endianness() !== 'LE') throw new Error('threshold CKKS needs a little-endian machine');

/**
 * A ring element of R_Q = Z_Q[X]/(X^N + 1) in RNS form, Q = q_0 · … · q_{L−1}: `L` limbs of `N`
 * words, limb-major (limb 0's N words, then limb 1's), each word below its limb's prime. This is
 * SEAL's own layout, so a polynomial moves to and from a SEAL object as bytes.
 *
 * Every polynomial here is in SEAL's NTT (evaluation) form unless a name says otherwise: there,
 * multiplication is word by word, and addition, multiplication and Shamir sharing need no
 * transform. Only noise is sampled in coefficient form and moved by SEAL
 * (`ThresholdContext.toNtt`).
 */
export type RnsPoly = BigUint64Array<ArrayBufferLike>;

/** The shape of the polynomials of one parameter set: degree and the primes of the limbs. */
export interface RnsShape {
  /** Ring degree N. */
  readonly n: number;
  /** The limbs' primes q_l, each below 2^61. */
  readonly moduli: readonly bigint[];
}

/** A zero polynomial of `shape`. */
export function zeroPoly(shape: RnsShape): RnsPoly {
  return new BigUint64Array(shape.n * shape.moduli.length);
}

/** Throws unless `p` has the shape's length and every word is below its limb's prime. */
export function assertPoly(shape: RnsShape, p: RnsPoly, name: string): void {
  const { n, moduli } = shape;
  if (!(p instanceof BigUint64Array) || p.length !== n * moduli.length) {
    throw new InvalidArgumentError(`${name} must be ${moduli.length}·${n} 64-bit words`);
  }
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    for (let i = l * n, end = i + n; i < end; i++) {
      if (p[i]! >= q)
        throw new CryptoError('POLY_OUT_OF_RANGE', `${name}: word ${i} is not below limb ${l}'s prime`);
    }
  }
}

/** `acc ← acc + b` mod Q. */
export function addInto(shape: RnsShape, acc: RnsPoly, b: RnsPoly): void {
  const { n, moduli } = shape;
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    for (let i = l * n, end = i + n; i < end; i++) {
      const s = acc[i]! + b[i]!;
      acc[i] = s >= q ? s - q : s;
    }
  }
}

/** `acc ← acc − b` mod Q. */
export function subInto(shape: RnsShape, acc: RnsPoly, b: RnsPoly): void {
  const { n, moduli } = shape;
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    for (let i = l * n, end = i + n; i < end; i++) {
      const x = acc[i]!;
      const y = b[i]!;
      acc[i] = x >= y ? x - y : x + q - y;
    }
  }
}

/** `acc ← acc + a ⊙ b` mod Q (NTT form: the ring product). */
export function mulAddInto(shape: RnsShape, acc: RnsPoly, a: RnsPoly, b: RnsPoly): void {
  const { n, moduli } = shape;
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    for (let i = l * n, end = i + n; i < end; i++) acc[i] = (acc[i]! + a[i]! * b[i]!) % q;
  }
}

/**
 * `acc ← acc · x + b` mod Q for a small non-negative integer `x` (one Horner step of evaluating a
 * polynomial whose coefficients are ring elements, as Shamir sharing does).
 */
export function hornerInto(shape: RnsShape, acc: RnsPoly, x: bigint, b: RnsPoly): void {
  const { n, moduli } = shape;
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    for (let i = l * n, end = i + n; i < end; i++) acc[i] = (acc[i]! * x + b[i]!) % q;
  }
}

/**
 * Fills each limb uniformly below its prime from a stream of 64-bit words, by rejection:
 * words are masked to the prime's bit length and redrawn when not below it.
 */
function fillUniform(shape: RnsShape, next: () => bigint): RnsPoly {
  const { n, moduli } = shape;
  const out = zeroPoly(shape);
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    const mask = (1n << BigInt(q.toString(2).length)) - 1n;
    for (let i = l * n, end = i + n; i < end; i++) {
      let w = next() & mask;
      while (w >= q) w = next() & mask;
      out[i] = w;
    }
  }
  return out;
}

/** A polynomial uniform in R_Q from the operating system's random source (Shamir coefficients). */
export function randomPoly(shape: RnsShape): RnsPoly {
  let buf: BigUint64Array<ArrayBufferLike> = new BigUint64Array(0);
  let at = 0;
  return fillUniform(shape, () => {
    if (at === buf.length) {
      buf = randomWords(4096);
      at = 0;
    }
    return buf[at++]!;
  });
}

/** `count` 64-bit words from the operating system's random source. */
export function randomWords(count: number): BigUint64Array {
  const b = randomBytes(8 * count);
  return new BigUint64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

/**
 * A polynomial uniform in R_Q expanded from `seed` with SHAKE-256 (a common random polynomial):
 * everyone who knows the seed gets the same polynomial, nobody can steer it.
 */
export function expandPoly(shape: RnsShape, seed: Uint8Array): RnsPoly {
  const words = shape.n * shape.moduli.length;
  // Rejection redraws about 2^−50 of the words at 60-bit primes; 1/64 spare covers it.
  let block = 0;
  let buf: BigUint64Array<ArrayBufferLike> = new BigUint64Array(0);
  let at = 0;
  return fillUniform(shape, () => {
    if (at === buf.length) {
      const h = createHash('shake256', { outputLength: 8 * (block === 0 ? words + (words >> 6) : 1024) });
      h.update(seed).update(Uint8Array.of(block++));
      buf = new BigUint64Array(new Uint8Array(h.digest()).buffer);
      at = 0;
    }
    return buf[at++]!;
  });
}

/** The centred integer of each coefficient of limb 0 (|value| < q_0 / 2); for tests and noise checks. */
export function centredLimb0(shape: RnsShape, p: RnsPoly): bigint[] {
  const q = shape.moduli[0]!;
  const half = q >> 1n;
  return Array.from(p.subarray(0, shape.n), (w) => (w > half ? w - q : w));
}

/** Overwrites `p` with zeros (a secret polynomial no longer needed). */
export function wipe(p: RnsPoly): void {
  p.fill(0n);
}
