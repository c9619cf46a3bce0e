import { InvalidArgumentError } from '../../src/errors/index.ts';

import { LANE_SUM_TOLERANCE } from '../lanes/lane-pack.ts';

// The lanes define what a decrypted slot may be off by; CKKS noise is sized to stay under it.
export { LANE_SUM_TOLERANCE };

/**
 * Standard deviation of the per-slot decryption error of one fresh ciphertext (secret-key, seeded,
 * last level) at N = 8192, moduli [60, 40, 60] and scale 2^16, measured on node-seal 7 over 4,096
 * slots: 0.0032 (`test/crypto/ckks-noise.test.ts` measures it again and fails if it is exceeded).
 * The error of a sum of K such ciphertexts is independent per ciphertext, so its σ grows as √K
 * (measured: 0.0257 at K = 64, 0.0514 at 256, 0.1026 at 1,024); it halves with each scale bit and
 * grows as √N with the ring degree (the canonical embedding sums N/2 coefficients).
 */
export const FRESH_SLOT_NOISE_SIGMA_N8192_S16 = 0.0032;

/** σ of a slot's error is kept below {@link LANE_SUM_TOLERANCE} by this many standard deviations. */
export const NOISE_MARGIN_SIGMAS = 6;

/** σ of the decryption error of one slot of a sum of `contributors` fresh ciphertexts. */
export function slotNoiseSigma(polyModulusDegree: number, scaleBits: number, contributors: number): number {
  return (
    FRESH_SLOT_NOISE_SIGMA_N8192_S16 *
    Math.sqrt(polyModulusDegree / 8192) *
    2 ** (16 - scaleBits) *
    Math.sqrt(contributors)
  );
}

/**
 * The smallest `scaleBits` at which a sum of `contributors` fresh ciphertexts decrypts every slot
 * within {@link LANE_SUM_TOLERANCE} with a margin of {@link NOISE_MARGIN_SIGMAS} σ (a slot beyond it
 * may round to another integer, which the aggregate's MAC check refuses as `MAC_MISMATCH`, so too
 * small a scale aborts rounds, it never corrupts them).
 * E.g. N = 8192: 16 up to 169 contributors, 17 up to 678, 18 up to 2,712.
 */
export function minScaleBits(polyModulusDegree: number, contributors: number): number {
  if (!Number.isInteger(contributors) || contributors < 1) {
    throw new InvalidArgumentError(`contributors must be a positive integer, got ${contributors}`);
  }
  const sigmaAt16 = slotNoiseSigma(polyModulusDegree, 16, contributors);
  return Math.max(10, Math.ceil(16 + Math.log2((NOISE_MARGIN_SIGMAS * sigmaAt16) / LANE_SUM_TOLERANCE)));
}
