import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * Parameters of threshold CKKS: the ring, the moduli sites encrypt under, the encoding scale and
 * the noise flooding that makes a decryption share leak nothing beyond the aggregate.
 *
 * Ciphertexts travel at the first data level: every modulus but the special (last) one, so
 * `coeffModulus.length − 1` RNS limbs. A decryption share floods its noise with a uniform
 * polynomial of coefficients in [−B, B], B = 2^statisticalSecurityBits · 21 · maxSites (21 bounds
 * one fresh error coefficient of SEAL's centred binomial sampler; a sum of at most `maxSites`
 * of them is what the flooding must hide), and the scale is set so that the flooding of up to
 * `maxSites` shares still rounds every slot to its integer ({@link assertThresholdParams}).
 */
export interface ThresholdParams {
  /** Ring degree N; a ciphertext holds N/2 slots. */
  readonly polyModulusDegree: 8192 | 16384;
  /** Bit sizes of the coefficient moduli, last one the special prime (unused by ciphertexts). */
  readonly coeffModulus: readonly number[];
  /** log2 of the encoding scale Δ. */
  readonly scaleBits: number;
  /** Bits of integer per slot that decrypt exactly after summation (|sum| < 2^exactBits). */
  readonly exactBits: number;
  /** Statistical security λ of the noise flooding: a share's distribution is within 2^−λ of one that hides the aggregate's noise. */
  readonly statisticalSecurityBits: number;
  /** Most sites a federation under these parameters may hold (bounds the noise flooded and the shares combined). */
  readonly maxSites: number;
}

/**
 * Default: N = 8192, moduli [60, 60, 60] (ciphertexts at 120 bits), Δ = 2^76, 42 exact bits,
 * λ = 47, up to 1,024 sites: the largest λ for which 1,024 flooded shares still round and a sum
 * below 2^42 still fits under half the 120-bit modulus. The key level totals 180 bits, under the 218 that the homomorphic
 * encryption standard allows at N = 8192 for 128-bit security with a ternary secret.
 */
export const DEFAULT_THRESHOLD_PARAMS: ThresholdParams = Object.freeze({
  polyModulusDegree: 8192,
  coeffModulus: Object.freeze([60, 60, 60]),
  scaleBits: 76,
  exactBits: 42,
  statisticalSecurityBits: 47,
  maxSites: 1024,
});

/** Bound of one coefficient of SEAL's fresh encryption error (centred binomial, σ = 3.2). */
export const FRESH_ERROR_BOUND = 21;

/** The homomorphic encryption standard's 128-bit limits on total modulus bits (ternary secret). */
const MAX_TOTAL_BITS: Readonly<Record<number, number>> = { 8192: 218, 16384: 438 };

/**
 * Standard deviations a slot's error is kept under half an integer by: at 9σ a Gaussian tail is
 * 2^−61, so a round of 2^20 slots misrounds one with probability under 2^−40.
 */
export const ROUNDING_MARGIN_SIGMAS = 9;

/** log2 of the flooding bound B (coefficients of a share's noise are uniform in [−B, B]). */
export function floodingBits(params: ThresholdParams): number {
  return params.statisticalSecurityBits + Math.log2(FRESH_ERROR_BOUND * params.maxSites);
}

/** The flooding bound B = 2^λ · 21 · maxSites, exactly. */
export function floodingBound(params: ThresholdParams): bigint {
  return (1n << BigInt(params.statisticalSecurityBits)) * BigInt(FRESH_ERROR_BOUND * params.maxSites);
}

/**
 * σ of one slot's decryption error when `shares` shares are combined, in units of one integer:
 * each share adds N coefficients uniform in [−B, B] (σ = B/√3); decoding sums N/2 of them per slot
 * (real part), so σ_slot = B/√3 · √shares · √(N/2) / Δ. Fresh encryption noise (≤ 21 per
 * coefficient per site) is 2^λ times smaller and left out.
 */
export function thresholdSlotSigma(params: ThresholdParams, shares: number): number {
  return (
    (2 ** floodingBits(params) / Math.sqrt(3)) *
    Math.sqrt(shares) *
    Math.sqrt(params.polyModulusDegree / 2) *
    2 ** -params.scaleBits
  );
}

/** Throws `INVALID_ARGUMENT` naming the field when `params` cannot work. */
export function assertThresholdParams(params: ThresholdParams): void {
  const {
    polyModulusDegree: n,
    coeffModulus,
    scaleBits,
    exactBits,
    statisticalSecurityBits,
    maxSites,
  } = params;
  const limit = MAX_TOTAL_BITS[n];
  if (limit === undefined)
    throw new InvalidArgumentError(`threshold.polyModulusDegree ${n} must be 8192 or 16384`);
  if (coeffModulus.length < 2) {
    throw new InvalidArgumentError(
      `threshold.coeffModulus has ${coeffModulus.length} moduli, needs at least 2`,
    );
  }
  coeffModulus.forEach((b, i) => {
    if (!Number.isInteger(b) || b < 30 || b > 60) {
      throw new InvalidArgumentError(`threshold.coeffModulus[${i}] is ${b}, must be an integer in [30, 60]`);
    }
  });
  const total = coeffModulus.reduce((a, b) => a + b, 0);
  if (total > limit)
    throw new InvalidArgumentError(`threshold.coeffModulus totals ${total} bits, N=${n} allows ${limit}`);
  if (!Number.isInteger(maxSites) || maxSites < 2 || maxSites > 65_536) {
    throw new InvalidArgumentError(`threshold.maxSites ${maxSites} must be an integer in [2, 65536]`);
  }
  if (
    !Number.isInteger(statisticalSecurityBits) ||
    statisticalSecurityBits < 30 ||
    statisticalSecurityBits > 80
  ) {
    throw new InvalidArgumentError(
      `threshold.statisticalSecurityBits ${statisticalSecurityBits} must be an integer in [30, 80]`,
    );
  }
  if (floodingBits(params) >= 62) {
    throw new InvalidArgumentError(
      `threshold.statisticalSecurityBits ${statisticalSecurityBits} with maxSites ${maxSites}: flooding of 2^${floodingBits(params).toFixed(1)} is beyond the sampler's 2^62`,
    );
  }
  if (!Number.isInteger(exactBits) || exactBits < 8) {
    throw new InvalidArgumentError(`threshold.exactBits ${exactBits} must be an integer ≥ 8`);
  }
  const sigma = thresholdSlotSigma(params, maxSites);
  if (!Number.isInteger(scaleBits) || ROUNDING_MARGIN_SIGMAS * sigma > 0.5) {
    const need = Math.ceil(params.scaleBits + Math.log2(2 * ROUNDING_MARGIN_SIGMAS * sigma));
    throw new InvalidArgumentError(
      `threshold.scaleBits ${scaleBits}: noise flooding of ${maxSites} shares needs at least ${need}`,
    );
  }
  // A sum below 2^exactBits at scale Δ must stay under half the ciphertext modulus.
  const dataBits = total - coeffModulus[coeffModulus.length - 1]!;
  if (exactBits + scaleBits > dataBits - 2) {
    throw new InvalidArgumentError(
      `threshold.exactBits ${exactBits} + scaleBits ${scaleBits} must be ≤ ${dataBits - 2} (ciphertext modulus ${dataBits} bits)`,
    );
  }
}

/** RNS limbs a ciphertext, a share or a secret share carries (every modulus but the special one). */
export function thresholdLimbs(params: ThresholdParams): number {
  return params.coeffModulus.length - 1;
}

/**
 * 32-byte identifier of the parameters: SHA-256 over a domain-separated canonical encoding.
 * Blocks name it; a ciphertext under other parameters is refused before it is parsed.
 */
export function thresholdParamsId(params: ThresholdParams): Uint8Array {
  const canonical = `cohort/v1/threshold-ckks-params\0N=${params.polyModulusDegree};q=${params.coeffModulus.join(',')};scale=${params.scaleBits};exact=${params.exactBits};lambda=${params.statisticalSecurityBits};sites=${params.maxSites}`;
  return new Uint8Array(createHash('sha256').update(canonical).digest());
}

/**
 * The default threshold for `sites` sites: ⌈2n/3⌉, raised to `minContributors` (a coalition
 * short of it can then never decrypt an aggregate the round would refuse as too small).
 */
export function defaultThreshold(sites: number, minContributors: number): number {
  if (!Number.isInteger(sites) || sites < 1)
    throw new InvalidArgumentError(`sites must be a positive integer, got ${sites}`);
  if (!Number.isInteger(minContributors) || minContributors < 1) {
    throw new InvalidArgumentError(`minContributors must be a positive integer, got ${minContributors}`);
  }
  return Math.min(sites, Math.max(Math.ceil((2 * sites) / 3), minContributors));
}
