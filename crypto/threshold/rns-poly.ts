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
 * A 64-bit word as two 32-bit halves, little-endian: how words are written without BigInt
 * arithmetic (the samplers run once per coefficient of every ciphertext).
 */
export function halves(w: bigint): [lo: number, hi: number] {
  return [Number(w & 0xffff_ffffn), Number(w >> 32n)];
}

/**
 * Fills each limb uniformly below its prime from a stream of 32-bit words (two per candidate), by
 * rejection: a candidate is masked to the prime's bit length and redrawn when not below it.
 */
function fillUniform(shape: RnsShape, next32: () => number): RnsPoly {
  const { n, moduli } = shape;
  const out = zeroPoly(shape);
  const out32 = new Uint32Array(out.buffer);
  for (let l = 0; l < moduli.length; l++) {
    const [qlo, qhi] = halves(moduli[l]!);
    const bits = moduli[l]!.toString(2).length;
    // Candidates are two 32-bit words, the high one masked: primes of 33 to 63 bits only.
    if (bits < 33 || bits > 63) {
      throw new InvalidArgumentError(`limb ${l}'s prime has ${bits} bits; uniform sampling needs 33 to 63`);
    }
    const hiMask = 2 ** (bits - 32) - 1;
    for (let i = l * n, end = i + n; i < end; i++) {
      let lo: number;
      let hi: number;
      do {
        lo = next32();
        hi = next32() & hiMask;
      } while (hi > qhi || (hi === qhi && lo >= qlo));
      out32[2 * i] = lo;
      out32[2 * i + 1] = hi;
    }
  }
  return out;
}

/** A stream of 32-bit words from `refill`, which returns a fresh block each time it runs out. */
function stream32(refill: () => Uint8Array): () => number {
  let buf: Uint32Array<ArrayBufferLike> = new Uint32Array(0);
  let at = 0;
  return () => {
    if (at === buf.length) {
      const b = refill();
      buf = new Uint32Array(b.buffer.slice(b.byteOffset, b.byteOffset + (b.length & ~3)));
      at = 0;
    }
    return buf[at++]!;
  };
}

/** A polynomial uniform in R_Q from the operating system's random source (Shamir coefficients). */
export function randomPoly(shape: RnsShape): RnsPoly {
  return fillUniform(
    shape,
    stream32(() => randomBytes(32_768)),
  );
}

/**
 * A polynomial uniform in R_Q expanded from `seed` with SHAKE-256 (a common random polynomial):
 * everyone who knows the seed gets the same polynomial, nobody can steer it.
 */
export function expandPoly(shape: RnsShape, seed: Uint8Array): RnsPoly {
  const words = shape.n * shape.moduli.length;
  // Rejection redraws about 2^−50 of the words at 60-bit primes; 1/64 spare covers it, and
  // further blocks (never needed in practice) keep the stream going.
  let block = 0;
  return fillUniform(
    shape,
    stream32(() => {
      const length = 8 * (block === 0 ? words + (words >> 6) : 1024);
      return createHash('shake256', { outputLength: length }).update(seed).update(counter(block++)).digest();
    }),
  );
}

/** A refill block's number, 4 bytes big-endian (a 1-byte counter would repeat after 256 refills). */
function counter(block: number): Uint8Array {
  if (block > 0xffff_ffff) throw new InvalidArgumentError('expandPoly ran past 2^32 refills');
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, block);
  return out;
}

/**
 * The centred integer (|value| < Q/2) of each coefficient of a coefficient-form polynomial, by
 * the Chinese remainder theorem over the limbs; for tests and noise measurements.
 */
export function centredIntegers(shape: RnsShape, p: RnsPoly): bigint[] {
  const { n, moduli } = shape;
  const big = moduli.reduce((a, q) => a * q, 1n);
  const basis = moduli.map((q) => {
    const rest = big / q;
    let inv = 1n;
    let b = rest % q;
    for (let e = q - 2n; e > 0n; e >>= 1n) {
      if (e & 1n) inv = (inv * b) % q;
      b = (b * b) % q;
    }
    return rest * inv;
  });
  const half = big >> 1n;
  return Array.from({ length: n }, (_, i) => {
    let x = 0n;
    for (let l = 0; l < moduli.length; l++) x += p[l * n + i]! * basis[l]!;
    x %= big;
    return x > half ? x - big : x;
  });
}

/** Overwrites `p` with zeros (a secret polynomial no longer needed). */
export function wipe(p: RnsPoly): void {
  p.fill(0n);
}
