import { InvalidArgumentError } from '../../src/errors/index.ts';
import { hornerInto, type RnsPoly, type RnsShape, randomPoly, wipe, zeroPoly } from './rns-poly.ts';

/**
 * Shamir secret sharing of ring elements (Shamir, "How to share a secret", CACM 1979), word by
 * word over each limb's prime field, as the t-out-of-N multiparty RLWE scheme does (Mouchet,
 * Bertrand, Hubaux, J. Cryptology 2023, §4): f(X) = secret + r_1·X + … + r_{t−1}·X^{t−1} with
 * uniform r_k, and party x receives f(x). Sharing is linear, so it commutes with the NTT and
 * works on NTT-form polynomials directly.
 */

/** Checks the evaluation points: distinct integers in [1, 65536] (never 0, where the secret sits). */
export function assertPoints(points: readonly number[], name = 'points'): void {
  const seen = new Set<number>();
  for (const x of points) {
    if (!Number.isInteger(x) || x < 1 || x > 65_536)
      throw new InvalidArgumentError(`${name}: ${x} is not an integer in [1, 65536]`);
    if (seen.has(x)) throw new InvalidArgumentError(`${name}: ${x} appears twice`);
    seen.add(x);
  }
}

/**
 * Shares `secret` so that any `threshold` of the `points` reconstruct it and fewer learn nothing:
 * returns f(x) for each point, in the points' order. The random coefficients are wiped.
 */
export function shareSecret(
  shape: RnsShape,
  secret: RnsPoly,
  threshold: number,
  points: readonly number[],
): RnsPoly[] {
  assertPoints(points);
  if (!Number.isInteger(threshold) || threshold < 1 || threshold > points.length) {
    throw new InvalidArgumentError(`threshold ${threshold} must be an integer in [1, ${points.length}]`);
  }
  const coefficients = Array.from({ length: threshold - 1 }, () => randomPoly(shape));
  try {
    return points.map((x) => {
      // Horner from the highest coefficient down to the secret.
      const acc = zeroPoly(shape);
      const bx = BigInt(x);
      for (let k = coefficients.length - 1; k >= 0; k--) hornerInto(shape, acc, bx, coefficients[k]!);
      hornerInto(shape, acc, bx, secret);
      return acc;
    });
  } finally {
    for (const c of coefficients) wipe(c);
  }
}

/** λ_x = Π_{k ∈ points, k ≠ x} k / (k − x) as a fraction of integers: f(0) = Σ λ_x · f(x). */
export function lagrangeAtZero(points: readonly number[], x: number): { num: bigint; den: bigint } {
  assertPoints(points);
  if (!points.includes(x)) throw new InvalidArgumentError(`point ${x} is not among the points`);
  let num = 1n;
  let den = 1n;
  for (const k of points) {
    if (k === x) continue;
    num *= BigInt(k);
    den *= BigInt(k - x);
  }
  return { num, den };
}

/** `num / den` mod q for a prime q not dividing `den`. */
export function fractionMod(num: bigint, den: bigint, q: bigint): bigint {
  const d = ((den % q) + q) % q;
  if (d === 0n) throw new InvalidArgumentError('denominator divisible by the modulus');
  return ((((num % q) + q) % q) * modPow(d, q - 2n, q)) % q;
}

function modPow(base: bigint, exp: bigint, q: bigint): bigint {
  let r = 1n;
  let b = base % q;
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) r = (r * b) % q;
    b = (b * b) % q;
  }
  return r;
}

/** `p · num / den` in every limb, as a new polynomial. */
export function scaleByFraction(shape: RnsShape, p: RnsPoly, num: bigint, den: bigint): RnsPoly {
  const { n, moduli } = shape;
  const out = zeroPoly(shape);
  for (let l = 0; l < moduli.length; l++) {
    const q = moduli[l]!;
    const k = fractionMod(num, den, q);
    for (let i = l * n, end = i + n; i < end; i++) out[i] = (p[i]! * k) % q;
  }
  return out;
}
