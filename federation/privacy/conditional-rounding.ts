import { InvalidArgumentError, UpdateError } from '../../src/errors/index.ts';
import type { UniformSource } from './uniform-source.ts';

/** Tries before conditional rounding gives up (each succeeds with probability ≥ 1 − β). */
export const MAX_ROUNDING_TRIES = 64;

/**
 * The L2 norm bound after randomized rounding of a vector of L2 norm ≤ `scaledNorm` (already in
 * levels) in `dimension` coordinates, that one rounding meets with probability ≥ 1 − `beta`:
 * Kairouz, Liu, Steinke, "The Distributed Discrete Gaussian Mechanism for Federated Learning with
 * Secure Aggregation", ICML 2021, conditional randomized rounding:
 *
 * `min{ c + √d,  √(c² + d/4 + √(2 log(1/β))·(c + √d/2)) }`
 *
 * The first term holds always (each coordinate moves by less than one level).
 */
export function roundedNormBound(scaledNorm: number, dimension: number, beta: number): number {
  if (!(Number.isFinite(scaledNorm) && scaledNorm > 0)) {
    throw new InvalidArgumentError(`scaled norm is ${scaledNorm}, it must be finite and > 0`, {
      details: { name: 'scaledNorm' },
    });
  }
  if (!(Number.isSafeInteger(dimension) && dimension >= 1)) {
    throw new InvalidArgumentError(`dimension is ${dimension}, it must be an integer ≥ 1`, {
      details: { name: 'dimension' },
    });
  }
  if (!(beta > 0 && beta < 1)) {
    throw new InvalidArgumentError(`beta is ${beta}, it must be in (0, 1)`, { details: { name: 'beta' } });
  }
  const c = scaledNorm;
  const d = dimension;
  const sure = c + Math.sqrt(d);
  const likely = Math.sqrt(c * c + d / 4 + Math.sqrt(2 * Math.log(1 / beta)) * (c + Math.sqrt(d) / 2));
  return Math.min(sure, likely);
}

/**
 * Unbiased randomized rounding of `scale · x` to integers (each coordinate rounds up with
 * probability equal to its fractional part), repeated until the result's L2 norm is at most
 * `normBound`: the bound is then a certainty, not a likelihood, so the sensitivity the accountant
 * uses holds for every release.
 *
 * @throws UpdateError `UPDATE_NON_FINITE` naming the index of a non-finite `x[i]`
 * @throws InvalidArgumentError when a scaled value does not fit an int32, or no rounding within
 *   {@link MAX_ROUNDING_TRIES} tries meets the bound (the bound was computed for a larger β or the
 *   input was not clipped)
 */
export function roundWithinNorm(
  x: Float32Array,
  scale: number,
  normBound: number,
  uniform: UniformSource,
): { levels: Int32Array; tries: number } {
  if (!(Number.isFinite(scale) && scale > 0)) {
    throw new InvalidArgumentError(`scale is ${scale}, it must be finite and > 0`, {
      details: { name: 'scale' },
    });
  }
  const n = x.length;
  const scaled = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    if (!Number.isFinite(v)) {
      throw new UpdateError('UPDATE_NON_FINITE', `update[${i}] is ${v}`, { details: { index: i } });
    }
    const s = v * scale;
    if (Math.abs(s) >= 2 ** 31 - 1) {
      throw new InvalidArgumentError(`update[${i}]·scale is ${s}, outside int32`, {
        details: { name: 'scale' },
      });
    }
    scaled[i] = s;
  }
  const levels = new Int32Array(n);
  const bound2 = normBound * normBound;
  for (let tries = 1; tries <= MAX_ROUNDING_TRIES; tries++) {
    let norm2 = 0;
    for (let i = 0; i < n; i++) {
      const s = scaled[i]!;
      const lo = Math.floor(s);
      const level = uniform() < s - lo ? lo + 1 : lo;
      levels[i] = level;
      norm2 += level * level;
    }
    if (norm2 <= bound2) return { levels, tries };
  }
  throw new InvalidArgumentError(
    `no randomized rounding in ${MAX_ROUNDING_TRIES} tries kept the L2 norm within ${normBound} levels: clip the update first`,
    { details: { name: 'normBound' } },
  );
}
