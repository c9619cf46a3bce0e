import {
  addSkellamNoise,
  cryptoUniformSource,
  roundWithinNorm,
  type UniformSource,
} from '../../../federation/privacy/index.ts';
import { clipToL2Norm } from '../../../federation/robust/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { ServicePrivacy } from '../privacy-plan.ts';

/** What a site sends under differential privacy, and what it learned doing so (for its log). */
export interface PrivateLevels {
  /** `digits` lanes per parameter, least significant first, each in [0, 2^bits). */
  readonly levels: Uint8Array;
  /** L2 norm of the update before clipping (stays on the site). */
  readonly norm: number;
  /** Whether clipping scaled the update down. */
  readonly clipped: boolean;
  /** Noise draws clamped to the lane range (expected 0: each has probability 2^-80). */
  readonly clamped: number;
}

/**
 * A site's update under differential privacy (docs/privacy.md): Δw clipped to the clip norm,
 * `scale·Δw` rounded to integers within the sensitivity bound, the site's Skellam share added
 * (CSPRNG draws), offset by `valueBound` into [0, 2·valueBound] and split into `digits` lanes of
 * `bits`. No error feedback: a residual would carry this round's unnoised update into the next.
 */
export function privateLevels(
  privacy: ServicePrivacy,
  delta: Float32Array,
  bits: number,
  uniform: UniformSource = cryptoUniformSource(),
): PrivateLevels {
  const { plan, digits } = privacy;
  if (delta.length !== plan.settings.dimension) {
    throw new InvalidArgumentError(
      `update length ${delta.length}, the privacy plan expects ${plan.settings.dimension}`,
    );
  }
  const clip = clipToL2Norm(delta, plan.settings.clipNorm);
  const { levels: values } = roundWithinNorm(clip.clipped, plan.scale, plan.sensitivity.l2, uniform);
  clip.clipped.fill(0);
  const clamped = addSkellamNoise(values, plan.localVariance, plan.noiseRange, uniform);
  const mask = (1 << bits) - 1;
  const levels = new Uint8Array(values.length * digits);
  for (let i = 0; i < values.length; i++) {
    let v = values[i]! + plan.valueBound; // in [0, 2·valueBound] < 2^31
    for (let d = 0; d < digits; d++) {
      levels[i * digits + d] = v & mask;
      v >>>= bits;
    }
  }
  values.fill(0);
  return { levels, norm: clip.norm, clipped: clip.scaled, clamped };
}

/**
 * The mean update of `contributors` sites from the decrypted digit sums of their private levels
 * (length parameters × digits): each parameter's digits are carried into its total exactly (every
 * partial sum stays below 2^53), the K offsets removed, and the sum of noised integers divided by
 * scale · K.
 *
 * A total outside what K honest sites can send (±K·valueBound) is clamped to it and counted in
 * `clamped`, never refused: a hostile site can put any digits in its lanes, and refusing would let
 * one site abort every round. Clamping bounds what it can do to each parameter; every site clamps
 * alike, so the candidate is the same everywhere.
 */
export function privateMean(
  privacy: ServicePrivacy,
  laneSums: ArrayLike<number>,
  bits: number,
  contributors: number,
): { mean: Float32Array; clamped: number } {
  const { plan, digits } = privacy;
  const n = plan.settings.dimension;
  if (laneSums.length !== n * digits) {
    throw new InvalidArgumentError(`${laneSums.length} lane sums, ${n} parameters need ${n * digits}`);
  }
  if (!(Number.isSafeInteger(contributors) && contributors >= 1)) {
    throw new InvalidArgumentError(`contributors is ${contributors}, it must be an integer ≥ 1`);
  }
  const offset = contributors * plan.valueBound;
  const radix = 2 ** bits;
  const divisor = plan.scale * contributors;
  const mean = new Float32Array(n);
  let clamped = 0;
  for (let i = 0; i < n; i++) {
    let total = 0;
    for (let d = digits - 1; d >= 0; d--) total = total * radix + laneSums[i * digits + d]!;
    let value = total - offset;
    if (value > offset) {
      value = offset;
      clamped++;
    } else if (value < -offset) {
      value = -offset;
      clamped++;
    }
    mean[i] = value / divisor;
  }
  return { mean, clamped };
}
