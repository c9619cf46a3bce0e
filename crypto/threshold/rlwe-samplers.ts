import { InvalidArgumentError } from '../../src/errors/index.ts';
import { type RnsPoly, type RnsShape, randomWords, zeroPoly } from './rns-poly.ts';

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
      buf = randomWords(4096);
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
    for (let l = 0; l < moduli.length; l++) out[l * n + i] = e >= 0n ? e : e + moduli[l]!;
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

/**
 * Fresh encryption error: centred binomial with 21 + 21 coins (σ ≈ 3.24, |e| ≤ 21), the
 * distribution SEAL samples its own errors from.
 */
export function centredBinomialCoefficients(shape: RnsShape): RnsPoly {
  const next = wordStream();
  const mask = (1n << 21n) - 1n;
  const ones = (x: bigint): bigint => {
    let c = 0n;
    for (let v = x; v !== 0n; v &= v - 1n) c++;
    return c;
  };
  return fromIntegers(shape, () => {
    const w = next();
    return ones(w & mask) - ones((w >> 21n) & mask);
  });
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
