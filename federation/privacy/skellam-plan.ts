import { InvalidArgumentError } from '../../src/errors/index.ts';
import { roundedNormBound } from './conditional-rounding.ts';
import type { PrivacyCharge } from './rdp-ledger.ts';
import { skellamRangeFor } from './skellam-noise.ts';
import { INTEGER_RDP_ORDERS, type IntegerSensitivity, sampledSkellamRdp } from './skellam-rdp.ts';

/**
 * β of conditional randomized rounding, e^(−1/2): each rounding meets the norm bound with
 * probability ≥ 1 − β ≈ 0.39, so a site rounds 1.6 times on average and at most 64 (Kairouz, Liu,
 * Steinke 2021 use the same default).
 */
export const DEFAULT_ROUNDING_BETA = Math.exp(-0.5);

/** Per-coordinate probability that a site's noise draw is clamped to its lane range: 2^-80. */
export const DEFAULT_NOISE_TAIL = 2 ** -80;

/** Levels per clip norm by default: 4√d, so randomized rounding inflates the sensitivity by ~1–3%. */
export const DEFAULT_LEVELS_PER_SQRT_DIMENSION = 4;

/** What a federation configures for distributed DP (the site-level Skellam mechanism). */
export interface SkellamDpSettings {
  /** C: every site's update is clipped to this L2 norm before rounding (model units, finite > 0). */
  readonly clipNorm: number;
  /** z: standard deviation of the summed noise over the L2 sensitivity (finite > 0). */
  readonly noiseMultiplier: number;
  /** n: sites whose noise shares make up the total; each adds 1/n of the variance (integer ≥ 1). */
  readonly expectedContributors: number;
  /** d: parameters in an update (integer ≥ 1). */
  readonly dimension: number;
  /** Levels that C spans, finite > 0. Default 4√d (see {@link DEFAULT_LEVELS_PER_SQRT_DIMENSION}). */
  readonly clipLevels?: number;
  /** β of conditional rounding, in (0, 1). Default {@link DEFAULT_ROUNDING_BETA}. */
  readonly beta?: number;
  /** Per-coordinate clamp probability of a noise draw, in (0, 1). Default {@link DEFAULT_NOISE_TAIL}. */
  readonly noiseTail?: number;
}

/** Everything a site and the accountant derive from {@link SkellamDpSettings}; identical on every member. */
export interface SkellamDpPlan {
  readonly settings: Readonly<Required<SkellamDpSettings>>;
  /** s: levels per model unit (C·s = clipLevels). A site sends round(s·clip(u)) + noise. */
  readonly scale: number;
  /** Sensitivity in levels: Δ₂ is the conditional-rounding bound, Δ₁ = min(√d·Δ₂, Δ₂²) (integer vectors). */
  readonly sensitivity: IntegerSensitivity;
  /** Variance of each site's Skellam share per coordinate, levels²: (z·Δ₂)²/n. */
  readonly localVariance: number;
  /** A site's noise draws are clamped to [−R, R]. */
  readonly noiseRange: number;
  /** |level + noise| ≤ this for every coordinate a site sends: ⌊Δ₂⌋ + R. Sizes the lanes. */
  readonly valueBound: number;
}

function positive(name: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new InvalidArgumentError(`${name} is ${value}, it must be finite and > 0`, { details: { name } });
  }
}

function integerAtLeastOne(name: string, value: number): void {
  if (!(Number.isSafeInteger(value) && value >= 1)) {
    throw new InvalidArgumentError(`${name} is ${value}, it must be an integer ≥ 1`, { details: { name } });
  }
}

/** Validates `settings` (naming the bad field) and derives the plan. */
export function planSkellamDp(settings: SkellamDpSettings): SkellamDpPlan {
  positive('clipNorm', settings.clipNorm);
  positive('noiseMultiplier', settings.noiseMultiplier);
  integerAtLeastOne('expectedContributors', settings.expectedContributors);
  integerAtLeastOne('dimension', settings.dimension);
  const clipLevels = settings.clipLevels ?? DEFAULT_LEVELS_PER_SQRT_DIMENSION * Math.sqrt(settings.dimension);
  positive('clipLevels', clipLevels);
  const beta = settings.beta ?? DEFAULT_ROUNDING_BETA;
  const noiseTail = settings.noiseTail ?? DEFAULT_NOISE_TAIL;
  if (!(noiseTail > 0 && noiseTail < 1)) {
    throw new InvalidArgumentError(`noiseTail is ${noiseTail}, it must be in (0, 1)`, {
      details: { name: 'noiseTail' },
    });
  }
  const l2 = roundedNormBound(clipLevels, settings.dimension, beta);
  const l1 = Math.min(Math.sqrt(settings.dimension) * l2, l2 * l2);
  const localVariance = (settings.noiseMultiplier * l2) ** 2 / settings.expectedContributors;
  const noiseRange = skellamRangeFor(localVariance, noiseTail);
  const valueBound = Math.floor(l2) + noiseRange;
  if (!(valueBound < 2 ** 31 - 1)) {
    throw new InvalidArgumentError(`a site's value range ±${valueBound} levels does not fit an int32`, {
      details: { name: 'noiseMultiplier' },
    });
  }
  return Object.freeze({
    settings: Object.freeze({ ...settings, clipLevels, beta, noiseTail }),
    scale: clipLevels / settings.clipNorm,
    sensitivity: Object.freeze({ l2, l1 }),
    localVariance,
    noiseRange,
    valueBound,
  });
}

/**
 * The privacy charge of one round in which `contributors` sites each added their share (the
 * summed variance is contributors × the local variance: fewer sites, less noise, more ε), sites
 * having been sampled at rate `q` (1: every site takes part, no amplification). The δ cost is the
 * chance that any contributor's draw was clamped: contributors × d × the per-coordinate tail.
 */
export function skellamRoundCharge(
  plan: SkellamDpPlan,
  contributors: number,
  q = 1,
  orders: readonly number[] = INTEGER_RDP_ORDERS,
): PrivacyCharge {
  integerAtLeastOne('contributors', contributors);
  const variance = contributors * plan.localVariance;
  return {
    rdp: sampledSkellamRdp(q, plan.sensitivity, variance, 1, orders),
    deltaCost: contributors * plan.settings.dimension * plan.settings.noiseTail,
  };
}
