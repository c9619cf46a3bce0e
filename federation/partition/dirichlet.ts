import { InvalidArgumentError } from '../../src/errors/index.ts';
import type { RandomStream } from './random-stream.ts';

/**
 * Natural log of a Gamma(shape, 1) variate.
 *
 * shape ≥ 1: Marsaglia–Tsang (2000): d = shape − 1/3, c = 1/√(9d); repeat x ~ N(0,1)
 * (Box–Muller), v = (1 + c·x)³ until v > 0 and u < 1 − 0.0331·x⁴ or
 * ln u < x²/2 + d·(1 − v + ln v); the variate is d·v.
 *
 * shape < 1: the boost trick, G(shape) = G(shape + 1)·u^(1/shape), returned in the log domain
 * (ln G(shape + 1) + ln(u)/shape) so tiny shapes (α = 0.01) do not underflow to 0.
 *
 * @param shape - finite, > 0
 */
export function logGamma(shape: number, random: RandomStream): number {
  if (!(shape > 0) || !Number.isFinite(shape)) {
    throw new InvalidArgumentError(`gamma shape must be finite and > 0, got ${shape}`);
  }
  if (shape < 1) {
    const boosted = logGamma(shape + 1, random);
    return boosted + Math.log(random.nextOpenUniform()) / shape;
  }
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = random.nextNormal();
    const t = 1 + c * x;
    if (t <= 0) continue;
    const v = t * t * t;
    const u = random.nextOpenUniform();
    const x2 = x * x;
    if (u < 1 - 0.0331 * x2 * x2 || Math.log(u) < 0.5 * x2 + d * (1 - v + Math.log(v))) {
      return Math.log(d) + Math.log(v);
    }
  }
}

/**
 * A draw from the symmetric Dirichlet(α, …, α) over `k` categories: independent
 * Gamma(α, 1) variates normalised to sum 1 (computed as exp(ln gᵢ − max ln g) / Σ, so small α
 * keeps its mass on a few categories instead of underflowing).
 *
 * @param k - number of categories, ≥ 1
 * @param alpha - concentration, finite and > 0 (small: skewed; large: near uniform)
 */
export function sampleDirichlet(k: number, alpha: number, random: RandomStream): Float64Array {
  if (!Number.isInteger(k) || k < 1) throw new InvalidArgumentError(`k must be an integer ≥ 1, got ${k}`);
  const logs = new Float64Array(k);
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < k; i++) {
    const g = logGamma(alpha, random);
    logs[i] = g;
    if (g > max) max = g;
  }
  let sum = 0;
  for (let i = 0; i < k; i++) {
    const e = Math.exp(logs[i]! - max);
    logs[i] = e;
    sum += e;
  }
  for (let i = 0; i < k; i++) logs[i] = logs[i]! / sum;
  return logs;
}
