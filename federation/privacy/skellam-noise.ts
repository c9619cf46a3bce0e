import { InvalidArgumentError } from '../../src/errors/index.ts';
import { logAbsGamma } from './special-functions.ts';
import type { UniformSource } from './uniform-source.ts';

/** Below this mean, Poisson draws use inversion; at and above it, transformed rejection. */
const PTRS_MIN_MEAN = 10;

/**
 * One draw of Poisson(`mean`). Inversion by sequential search below mean 10 (about mean + 1
 * uniforms); above, Hörmann's transformed rejection with squeeze, PTRS ("The transformed rejection
 * method for generating Poisson random variables", Insurance: Mathematics and Economics 12, 1993),
 * about 2.3 uniforms a draw whatever the mean.
 *
 * @param mean - λ, finite and ≥ 0
 */
export function samplePoisson(mean: number, uniform: UniformSource): number {
  if (!(Number.isFinite(mean) && mean >= 0)) {
    throw new InvalidArgumentError(`Poisson mean is ${mean}, it must be finite and ≥ 0`, {
      details: { name: 'mean' },
    });
  }
  if (mean === 0) return 0;
  if (mean < PTRS_MIN_MEAN) {
    let k = 0;
    let p = Math.exp(-mean);
    let cdf = p;
    const u = uniform();
    while (u > cdf) {
      k += 1;
      p *= mean / k;
      cdf += p;
      if (p === 0) break; // cdf rounded below u in the far tail
    }
    return k;
  }
  const slam = Math.sqrt(mean);
  const logMean = Math.log(mean);
  const b = 0.931 + 2.53 * slam;
  const a = -0.059 + 0.02483 * b;
  const logInvAlpha = Math.log(1.1239 + 1.1328 / (b - 3.4));
  const vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    const u = uniform() - 0.5;
    const v = uniform();
    const us = 0.5 - Math.abs(u);
    const k = Math.floor(((2 * a) / us + b) * u + mean + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (Math.log(v) + logInvAlpha - Math.log(a / (us * us) + b) <= -mean + k * logMean - logAbsGamma(k + 1)) {
      return k;
    }
  }
}

/**
 * One draw of the symmetric Skellam distribution with variance `variance`: the difference of two
 * independent Poisson(variance/2) draws. Integer valued, mean 0; a sum of independent Skellam
 * draws is Skellam with the summed variance, which is what lets each site add a share of the noise.
 */
export function sampleSkellam(variance: number, uniform: UniformSource): number {
  const half = variance / 2;
  return samplePoisson(half, uniform) - samplePoisson(half, uniform);
}

/**
 * Adds one Skellam(`variance`) draw to every element of `values` in place, each draw clamped to
 * [−`range`, `range`] so that the lane it travels in cannot overflow. A clamp changes the mechanism
 * only with probability {@link skellamTailBound}(variance, range) per element; the caller charges
 * that to δ. Returns how many draws were clamped.
 *
 * @param range - integer ≥ 0
 */
export function addSkellamNoise(
  values: Int32Array,
  variance: number,
  range: number,
  uniform: UniformSource,
): number {
  if (!(Number.isFinite(variance) && variance >= 0)) {
    throw new InvalidArgumentError(`noise variance is ${variance}, it must be finite and ≥ 0`, {
      details: { name: 'variance' },
    });
  }
  if (!(Number.isSafeInteger(range) && range >= 0)) {
    throw new InvalidArgumentError(`noise range is ${range}, it must be an integer ≥ 0`, {
      details: { name: 'range' },
    });
  }
  let clamped = 0;
  for (let i = 0; i < values.length; i++) {
    let z = sampleSkellam(variance, uniform);
    if (z > range) {
      z = range;
      clamped += 1;
    } else if (z < -range) {
      z = -range;
      clamped += 1;
    }
    values[i] = values[i]! + z;
  }
  return clamped;
}

/**
 * Upper bound on P(|Z| > `range`) for Z ~ Skellam(`variance`), by Bernstein's inequality (Z is a
 * limit of sums of independent centred ±Bernoulli terms, each bounded by 1, of total variance v):
 * `2·exp(−t²/(2(v + t/3)))` with t = range + 1.
 */
export function skellamTailBound(variance: number, range: number): number {
  const t = range + 1;
  return Math.min(1, 2 * Math.exp(-(t * t) / (2 * (variance + t / 3))));
}

/** The smallest integer range whose {@link skellamTailBound} is at most `probability` (in (0, 1)). */
export function skellamRangeFor(variance: number, probability: number): number {
  if (!(probability > 0 && probability < 1)) {
    throw new InvalidArgumentError(`tail probability is ${probability}, it must be in (0, 1)`, {
      details: { name: 'probability' },
    });
  }
  // t²/(2(v + t/3)) ≥ L with L = log(2/p): t ≥ L/3 + √(L²/9 + 2vL)
  const l = Math.log(2 / probability);
  let range = Math.max(0, Math.ceil(l / 3 + Math.sqrt((l * l) / 9 + 2 * variance * l)) - 1);
  while (skellamTailBound(variance, range) > probability) range += 1;
  return range;
}
