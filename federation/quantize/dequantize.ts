import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { assertContributors, type QuantBits, resolveGrid } from './quant-grid.ts';

/**
 * Values of one site's levels: `value(ℓ) = f32(f32(ℓ · Δ) − f32(clip))`, the exact float32 value
 * {@link quantize} subtracted from u (so `u = dequantize(levels) + residual` up to one rounding).
 * Throws `INVALID_ARGUMENT` naming the first index whose level exceeds 2^bits − 1.
 *
 * @param out - optional destination of the same length as `levels`
 */
export function dequantize(
  levels: Uint8Array,
  bits: QuantBits,
  clip: number,
  out?: Float32Array,
): Float32Array {
  const { clip: c, step, maxLevel } = resolveGrid(bits, clip);
  const n = levels.length;
  const values = out ?? new Float32Array(n);
  if (values.length !== n) {
    throw new InvalidArgumentError(`out length ${values.length}, but levels length is ${n}`, {
      details: { name: 'out', actual: values.length, expected: n },
    });
  }
  const f = Math.fround;
  for (let i = 0; i < n; i++) {
    const level = levels[i]!;
    if (level > maxLevel) assertInteger(`levels[${i}]`, level, 0, maxLevel);
    values[i] = f(f(level * step) - c);
  }
  return values;
}

/**
 * Sum of K sites' values from the per-parameter sums of their levels: with S = Σ_k ℓ_k,
 * `Σ_k value(ℓ_k) = −K · clip + S · Δ`, computed in float64 from the float32 clip and Δ and then
 * stored to float32. It differs from summing the sites' float32 `dequantize` outputs only by
 * float32 rounding; |result − Σ_k clamp(u_k)| ≤ {@link sumErrorBound}.
 *
 * @param levelSums - S per parameter, integers in [0, K · (2^bits − 1)]; the first index outside is named
 * @param contributors - K, integer in [1, 2^32)
 * @param out - optional destination of the same length as `levelSums`
 */
export function dequantizeSum(
  levelSums: ArrayLike<number>,
  contributors: number,
  bits: QuantBits,
  clip: number,
  out?: Float32Array,
): Float32Array {
  const { clip: c, step, maxLevel } = resolveGrid(bits, clip);
  assertContributors(contributors);
  const n = levelSums.length;
  const values = out ?? new Float32Array(n);
  if (values.length !== n) {
    throw new InvalidArgumentError(`out length ${values.length}, but levelSums length is ${n}`, {
      details: { name: 'out', actual: values.length, expected: n },
    });
  }
  const maxSum = contributors * maxLevel;
  const offset = -contributors * c;
  for (let i = 0; i < n; i++) {
    const s = levelSums[i]!;
    if (!(s >= 0 && s <= maxSum && Number.isInteger(s))) assertInteger(`levelSums[${i}]`, s, 0, maxSum);
    values[i] = offset + s * step;
  }
  return values;
}
