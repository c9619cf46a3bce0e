import { assertFiniteArray, InvalidArgumentError } from '../../src/errors/index.ts';

/** Relative shrink of the scale factor when float32 rounding left a clipped norm above its bound. */
const FIRST_SHRINK = 2 ** -22;

/**
 * Euclidean norm ‖v‖₂ = √(Σ v_i²), squares summed in float64 in index order.
 *
 * @param v - finite values; a NaN or ±Infinity throws `UPDATE_NON_FINITE` naming its index
 * @returns ‖v‖₂ in the units of `v` (0 for an empty array)
 */
export function l2Norm(v: Float32Array): number {
  return Math.sqrt(sumOfSquares('v', v));
}

/** Result of {@link clipToL2Norm}. */
export interface L2Clip {
  /** A fresh array: `v` scaled by min(1, bound/‖v‖₂). */
  readonly clipped: Float32Array;
  /** ‖v‖₂ of the input, before clipping. */
  readonly norm: number;
  /** Whether `v` was scaled down (‖v‖₂ > bound). */
  readonly scaled: boolean;
}

/**
 * Scales `v` onto the L2 ball of radius `bound`: `clipped = v · min(1, bound/‖v‖₂)`. The one
 * implementation of norm clipping, used both for server-side norm bounding of updates
 * (Sun et al. 2019, "Can You Really Backdoor Federated Learning?") and for site-side clipping
 * before differential-privacy noise.
 *
 * Guarantee: `l2Norm(clipped) ≤ bound` exactly as {@link l2Norm} computes it. Each product is
 * rounded to float32, which can push the norm up by about 2^−24 relative; when it does, the scale
 * factor is shrunk by 2^−22 (then 4× more per retry) until the bound holds, so DP sensitivity is
 * never exceeded by rounding. A vector already inside the ball (norm 0 included) is copied unchanged.
 *
 * @param v - finite values (a non-finite one throws `UPDATE_NON_FINITE` naming its index); not modified
 * @param bound - radius, same units as `v`, finite and > 0
 */
export function clipToL2Norm(v: Float32Array, bound: number): L2Clip {
  if (typeof bound !== 'number' || !Number.isFinite(bound) || !(bound > 0)) {
    throw new InvalidArgumentError(`bound is ${String(bound)}, must be finite and > 0`, {
      details: { name: 'bound', value: String(bound) },
    });
  }
  const norm = Math.sqrt(sumOfSquares('v', v));
  if (!(norm > bound)) return { clipped: v.slice(), norm, scaled: false };
  const clipped = new Float32Array(v.length);
  let factor = bound / norm;
  let shrink = FIRST_SHRINK;
  for (;;) {
    for (let i = 0; i < v.length; i++) clipped[i] = v[i]! * factor;
    if (Math.sqrt(sumOfSquares('clipped', clipped)) <= bound) break;
    // shrink reaches 1 after 11 retries, making factor 0 and clipped all zeros: the loop ends.
    factor *= Math.max(0, 1 - shrink);
    shrink *= 4;
  }
  return { clipped, norm, scaled: true };
}

/** Σ v_i² in float64; throws naming the first non-finite index when the sum is not finite. */
function sumOfSquares(name: string, v: Float32Array): number {
  if (!(v instanceof Float32Array)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array`, { details: { name } });
  }
  let sum = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    sum += x * x;
  }
  // Squares of finite float32 values stay below 2^256, so the sum of up to 2^32 of them is finite:
  // a non-finite sum means a non-finite input, and only then is the array scanned for its index.
  if (sum - sum !== 0) assertFiniteArray(name, v);
  return sum;
}
