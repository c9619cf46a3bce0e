import { assertFiniteArray, assertLength, InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * The round's aggregate as the server rules take it: Δ̄ = Σ_k n_k·Δ_k / Σ_k n_k, where
 * Δ_k = w_k − w is client k's model minus the global model and n_k its weight (examples).
 *
 * For plaintext paths and tests; in `he` mode sites get Σ_k n_k·Δ_k from the decrypted aggregate
 * and call {@link meanFromSum}. Per element: the weighted sum accumulates in float64 in client order
 * k = 0, 1, …, is divided once by N = Σ_k n_k (also float64, same order) and is rounded once to
 * float32, so the result is deterministic for a given order of `deltas`.
 *
 * @param deltas - Δ_k, at least one, all the same length; every value finite (index named)
 * @param weights - n_k, one per delta, each finite and > 0 (e.g. example counts); N must stay finite
 * @returns a fresh Float32Array of Δ̄; the inputs are not modified
 */
export function weightedMeanDelta(deltas: readonly Float32Array[], weights: readonly number[]): Float32Array {
  if (!Array.isArray(deltas) || deltas.length === 0) {
    throw new InvalidArgumentError('deltas must hold at least one client delta', {
      details: { name: 'deltas' },
    });
  }
  if (!Array.isArray(weights)) {
    throw new InvalidArgumentError('weights must be an array of numbers', { details: { name: 'weights' } });
  }
  assertLength('weights', weights.length, deltas.length, 'deltas length');
  const n = deltas[0] instanceof Float32Array ? deltas[0].length : 0;
  let total = 0;
  deltas.forEach((delta, k) => {
    if (!(delta instanceof Float32Array)) {
      throw new InvalidArgumentError(`deltas[${k}] must be a Float32Array`, {
        details: { name: `deltas[${k}]` },
      });
    }
    assertLength(`deltas[${k}]`, delta.length, n, 'deltas[0] length');
    assertFiniteArray(`deltas[${k}]`, delta);
    const w = weights[k];
    if (typeof w !== 'number' || !Number.isFinite(w) || !(w > 0)) {
      throw new InvalidArgumentError(`weights[${k}] is ${String(w)}, must be finite and > 0`, {
        details: { name: `weights[${k}]`, value: String(w) },
      });
    }
    total += w;
  });
  if (!Number.isFinite(total)) {
    throw new InvalidArgumentError(`weights sum to ${total}, must be finite`, {
      details: { name: 'weights' },
    });
  }
  const out = new Float32Array(n);
  const k = deltas.length;
  for (let i = 0; i < n; i++) {
    let sum = 0;
    for (let j = 0; j < k; j++) sum += weights[j]! * deltas[j]![i]!;
    out[i] = sum / total;
  }
  // n_k·Δ_k can overflow float64 only for absurd weights; the float32 store can overflow for huge deltas.
  assertFiniteArray('weightedMeanDelta result', out);
  return out;
}

/**
 * Δ̄ from an aggregate sum: `f32(sum[i] / divisor)`, one float64 division rounded once to float32.
 * In `he` mode `sum` is the decrypted Σ_k n_k·Δ_k and `divisor` the committed total weight Σ_k n_k
 * (or the contributor count K for an unweighted sum).
 *
 * @param sum - finite values (index named)
 * @param divisor - finite and > 0
 * @returns a fresh Float32Array; `sum` is not modified
 */
export function meanFromSum(sum: Float32Array, divisor: number): Float32Array {
  if (!(sum instanceof Float32Array)) {
    throw new InvalidArgumentError('sum must be a Float32Array', { details: { name: 'sum' } });
  }
  if (typeof divisor !== 'number' || !Number.isFinite(divisor) || !(divisor > 0)) {
    throw new InvalidArgumentError(`divisor is ${String(divisor)}, must be finite and > 0`, {
      details: { name: 'divisor', value: String(divisor) },
    });
  }
  assertFiniteArray('sum', sum);
  const out = new Float32Array(sum.length);
  for (let i = 0; i < sum.length; i++) out[i] = sum[i]! / divisor;
  assertFiniteArray('meanFromSum result', out);
  return out;
}
