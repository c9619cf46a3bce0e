import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { weightedMeanDelta } from '../strategy/weighted-mean-delta.ts';
import { checkUpdates } from './check-updates.ts';

/** Coordinates per block of the pairwise-distance pass: n blocks of 8 KiB stay in cache together. */
const DISTANCE_BLOCK = 2048;

/** Parameters of {@link multiKrum}. */
export interface MultiKrumOptions {
  /** f, the number of Byzantine updates tolerated; integer ≥ 0 with n > 2f + 2. */
  readonly byzantine: number;
  /** m, how many updates are averaged; integer in [1, n]; default n − f (m = 1 is Krum). */
  readonly select?: number;
}

/** Result of {@link multiKrum}. */
export interface MultiKrumResult {
  /** Unweighted mean of the selected updates, float64 sums in index order rounded once to float32. */
  readonly mean: Float32Array;
  /** Indices of the m selected updates, ascending. */
  readonly selected: number[];
  /** Krum score of each update, by index: Σ of squared L2 distances to its n − f − 2 nearest others. */
  readonly scores: number[];
}

/**
 * Multi-Krum (Blanchard et al., "Machine Learning with Adversaries: Byzantine Tolerant Gradient
 * Descent", NeurIPS 2017). Update i scores s(i) = Σ ‖V_i − V_j‖² over the n − f − 2 updates j ≠ i
 * closest to it; the m updates with the lowest scores (ties to the lower index) are averaged.
 * With n > 2f + 2 an update far from the honest cluster scores high and is never chosen while the
 * honest updates agree.
 *
 * Each of the n(n − 1)/2 squared distances is computed once, accumulated in float64 in blocks of
 * 2,048 coordinates (so the n blocks being compared stay in cache), in O(n²·d) time.
 *
 * @param updates - n updates, all the same length, every value finite (index named); not modified
 * @param options - f and m, see {@link MultiKrumOptions}
 */
export function multiKrum(updates: readonly Float32Array[], options: MultiKrumOptions): MultiKrumResult {
  const d = checkUpdates(updates);
  const n = updates.length;
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be { byzantine, select? }', {
      details: { name: 'options' },
    });
  }
  const f = options.byzantine;
  assertInteger('byzantine', f, 0, Number.MAX_SAFE_INTEGER);
  if (!(n > 2 * f + 2)) {
    throw new InvalidArgumentError(
      `Multi-Krum needs n > 2f + 2 updates: n = ${n}, f = ${f}, 2f + 2 = ${2 * f + 2}`,
      { details: { name: 'byzantine', n, byzantine: f } },
    );
  }
  const m = options.select ?? n - f;
  assertInteger('select', m, 1, n);

  const distances = pairwiseSquaredDistances(updates, d);
  const nearest = n - f - 2;
  const row = new Float64Array(n - 1);
  const scores: number[] = [];
  for (let i = 0; i < n; i++) {
    let r = 0;
    for (let j = 0; j < n; j++) if (j !== i) row[r++] = distances[i * n + j]!;
    row.sort();
    let score = 0;
    for (let k = 0; k < nearest; k++) score += row[k]!;
    scores.push(score);
  }
  const ranked = scores.map((_, i) => i).sort((a, b) => scores[a]! - scores[b]! || a - b);
  const selected = ranked.slice(0, m).sort((a, b) => a - b);
  const mean = weightedMeanDelta(
    selected.map((i) => updates[i]!),
    selected.map(() => 1),
  );
  return { mean, selected, scores };
}

/** Symmetric n×n matrix (row-major) of ‖u_a − u_b‖², zero diagonal. */
function pairwiseSquaredDistances(updates: readonly Float32Array[], d: number): Float64Array {
  const n = updates.length;
  const out = new Float64Array(n * n);
  for (let start = 0; start < d; start += DISTANCE_BLOCK) {
    const stop = Math.min(d, start + DISTANCE_BLOCK);
    for (let a = 0; a < n; a++) {
      const ua = updates[a]!;
      for (let b = a + 1; b < n; b++) {
        const ub = updates[b]!;
        let sum = 0;
        for (let i = start; i < stop; i++) {
          const t = ua[i]! - ub[i]!;
          sum += t * t;
        }
        out[a * n + b] = out[a * n + b]! + sum;
      }
    }
  }
  for (let a = 0; a < n; a++) for (let b = a + 1; b < n; b++) out[b * n + a] = out[a * n + b]!;
  return out;
}
