import { InvalidArgumentError } from '../../src/errors/index.ts';
import { uniformNoiseCoefficients } from './rlwe-samplers.ts';
import { addInto, assertPoly, mulAddInto, type RnsPoly, wipe } from './rns-poly.ts';
import { assertPoints, lagrangeAtZero, scaleByFraction } from './shamir.ts';
import type { ThresholdContext } from './threshold-context.ts';
import { floodingBound } from './threshold-params.ts';

/**
 * Threshold decryption of an aggregate c0 = Σ_{i∈C} c0_i at one position: site x of the
 * decrypting set T sends d_x = a · λ_x · S_x + E_x, where S_x = Σ_{i∈C} [s_i]_x is the sum of its
 * Shamir shares of the contributors' secrets, λ_x its Lagrange coefficient in T, and E_x noise
 * flooding uniform in [−B, B] (`threshold-params.ts`). Then c0 + Σ_{x∈T} d_x = Δ·Σm_i + Σe_i + ΣE_x:
 * the slots round to the exact integer sums, and what a share reveals beyond them is hidden by
 * E_x to within 2^−λ statistical distance (Mouchet et al., PETS 2021, §4.3, "noise flooding").
 */

/**
 * The key a decrypting site uses for one round: λ_x · S_x for the decrypting set `points`.
 * `shareSum` is S_x; the result is a new polynomial (wipe it after the round).
 */
export function roundDecryptionKey(
  ctx: ThresholdContext,
  shareSum: RnsPoly,
  points: readonly number[],
  self: number,
): RnsPoly {
  assertPoly(ctx, shareSum, 'shareSum');
  assertPoints(points, 'decrypting set');
  const { num, den } = lagrangeAtZero(points, self);
  return scaleByFraction(ctx, shareSum, num, den);
}

/** This site's decryption share at the position of `crp`, under its round key (λ_x · S_x). */
export function decryptionShare(ctx: ThresholdContext, roundKey: RnsPoly, crp: RnsPoly): RnsPoly {
  assertPoly(ctx, roundKey, 'roundKey');
  assertPoly(ctx, crp, 'crp');
  const noise = uniformNoiseCoefficients(ctx, floodingBound(ctx.params));
  const d = ctx.toNtt(noise);
  wipe(noise);
  mulAddInto(ctx, d, crp, roundKey);
  return d;
}

/**
 * Combines an aggregate's c0 with one share from every site of the decrypting set and decodes
 * the slots (still carrying the flooding noise: round them to integers).
 */
export function combineShares(ctx: ThresholdContext, c0: RnsPoly, shares: readonly RnsPoly[]): Float64Array {
  assertPoly(ctx, c0, 'c0');
  if (shares.length === 0) throw new InvalidArgumentError('combining needs at least one share');
  const acc = c0.slice();
  shares.forEach((d, i) => {
    assertPoly(ctx, d, `shares[${i}]`);
    addInto(ctx, acc, d);
  });
  return ctx.decode(acc);
}
