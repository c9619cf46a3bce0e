import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { checkUpdates } from './check-updates.ts';

/**
 * Coordinate-wise trimmed mean (Yin et al. 2018): per coordinate, drop the `trimPerSide` largest
 * and `trimPerSide` smallest of the n values and average the remaining n − 2·trimPerSide.
 * `trimPerSide = 0` is the plain mean. The kept values are summed in ascending order in float64,
 * divided once and rounded once to float32, so the result does not depend on the order of `updates`.
 *
 * One scratch array of n doubles is sorted per coordinate; nothing is allocated per coordinate.
 *
 * @param updates - at least one, all the same length, every value finite (index named); not modified
 * @param trimPerSide - integer ≥ 0 with 2·trimPerSide < n (see {@link trimCount})
 * @returns a fresh Float32Array of length d
 */
export function trimmedMean(updates: readonly Float32Array[], trimPerSide: number): Float32Array {
  const d = checkUpdates(updates);
  const n = updates.length;
  assertInteger('trimPerSide', trimPerSide, 0, Number.MAX_SAFE_INTEGER);
  if (2 * trimPerSide >= n) {
    throw new InvalidArgumentError(
      `trimPerSide ${trimPerSide} would drop ${2 * trimPerSide} of ${n} updates; need 2·trimPerSide < n`,
      { details: { name: 'trimPerSide', trimPerSide, n } },
    );
  }
  const out = new Float32Array(d);
  const scratch = new Float64Array(n);
  const end = n - trimPerSide;
  const kept = end - trimPerSide;
  for (let i = 0; i < d; i++) {
    for (let k = 0; k < n; k++) scratch[k] = updates[k]![i]!;
    scratch.sort();
    let sum = 0;
    for (let k = trimPerSide; k < end; k++) sum += scratch[k]!;
    out[i] = sum / kept;
  }
  return out;
}

/**
 * Values trimmed per side for a trim fraction: ⌊fraction·n⌋, never more than ⌈n/2⌉ − 1, so at least
 * one value per coordinate is kept.
 *
 * @param n - number of updates, integer ≥ 1
 * @param fraction - share trimmed from each side, in [0, 0.5)
 */
export function trimCount(n: number, fraction: number): number {
  assertInteger('n', n, 1, Number.MAX_SAFE_INTEGER);
  if (typeof fraction !== 'number' || !(fraction >= 0 && fraction < 0.5)) {
    throw new InvalidArgumentError(`fraction is ${String(fraction)}, must be in [0, 0.5)`, {
      details: { name: 'fraction', value: String(fraction) },
    });
  }
  // fraction·n is rounded in float64 and can land on n/2 for fraction just below 0.5.
  return Math.min(Math.floor(fraction * n), (n - 1) >> 1);
}
