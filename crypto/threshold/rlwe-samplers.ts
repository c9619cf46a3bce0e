import { randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { halves, type RnsPoly, type RnsShape, zeroPoly } from './rns-poly.ts';

/**
 * Small random polynomials in coefficient form (secrets and noise), from the operating system's
 * random source, each coefficient reduced into every limb. They go to NTT form through SEAL
 * (`ThresholdContext.toNtt`).
 */

/** A stream of random 64-bit words, refilled 4,096 at a time. */
function wordStream(): () => bigint {
  let buf: BigUint64Array<ArrayBufferLike> = new BigUint64Array(0);
  let at = 0;
  return () => {
    if (at === buf.length) {
      const b = randomBytes(8 * 4096);
      buf = new BigUint64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
      at = 0;
    }
    return buf[at++]!;
  };
}

/** Writes the signed integers `sample()` returns into every limb of a new polynomial. */
function fromIntegers(shape: RnsShape, sample: () => bigint): RnsPoly {
  const { n, moduli } = shape;
  const out = zeroPoly(shape);
  for (let i = 0; i < n; i++) {
    const e = sample();
    // Flooding noise may exceed one limb's prime: reduce, do not just shift.
    for (let l = 0; l < moduli.length; l++) {
      const q = moduli[l]!;
      const r = e % q;
      out[l * n + i] = r >= 0n ? r : r + q;
    }
  }
  return out;
}

/** A secret with coefficients uniform in {−1, 0, 1} (SEAL's secret-key distribution). */
export function ternaryCoefficients(shape: RnsShape): RnsPoly {
  const next = wordStream();
  let word = 0n;
  let left = 0;
  return fromIntegers(shape, () => {
    for (;;) {
      if (left === 0) {
        word = next();
        left = 32;
      }
      const two = word & 3n;
      word >>= 2n;
      left--;
      if (two !== 3n) return two - 1n;
    }
  });
}

const POPCOUNT = Uint8Array.from({ length: 256 }, (_, b) => {
  let c = 0;
  for (let v = b; v !== 0; v &= v - 1) c++;
  return c;
});

/**
 * Fresh encryption error: centred binomial with 21 + 21 coins (σ ≈ 3.24, |e| ≤ 21), the
 * distribution SEAL samples its own errors from. Six random bytes a coefficient, counted by
 * table, written as 32-bit halves (this runs for every ciphertext).
 */
export function centredBinomialCoefficients(shape: RnsShape): RnsPoly {
  const { n, moduli } = shape;
  const out = zeroPoly(shape);
  const out32 = new Uint32Array(out.buffer);
  // Each limb's residues of −21 … 21 as 32-bit halves.
  const table = moduli.map((q) =>
    Array.from({ length: 43 }, (_, k) => halves(BigInt(k - 21) < 0n ? q + BigInt(k - 21) : BigInt(k - 21))),
  );
  const coins = randomBytes(6 * n);
  for (let i = 0; i < n; i++) {
    const o = 6 * i;
    const e =
      POPCOUNT[coins[o]!]! +
      POPCOUNT[coins[o + 1]!]! +
      POPCOUNT[coins[o + 2]! & 0x1f]! -
      POPCOUNT[coins[o + 3]!]! -
      POPCOUNT[coins[o + 4]!]! -
      POPCOUNT[coins[o + 5]! & 0x1f]!;
    for (let l = 0; l < moduli.length; l++) {
      const [lo, hi] = table[l]![e + 21]!;
      const w = 2 * (l * n + i);
      out32[w] = lo;
      out32[w + 1] = hi;
    }
  }
  coins.fill(0);
  return out;
}

/** Noise flooding: coefficients uniform integers in [−bound, bound] (bound below 2^62). */
export function uniformNoiseCoefficients(shape: RnsShape, bound: bigint): RnsPoly {
  if (bound < 1n || bound >= 1n << 62n)
    throw new InvalidArgumentError(`noise bound must be in [1, 2^62), got ${bound}`);
  const span = 2n * bound + 1n;
  const mask = (1n << BigInt(span.toString(2).length)) - 1n;
  const next = wordStream();
  return fromIntegers(shape, () => {
    let w = next() & mask;
    while (w >= span) w = next() & mask;
    return w - bound;
  });
}
