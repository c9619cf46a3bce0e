import { BlockRejectedError, InvalidArgumentError } from '../../src/errors/index.ts';
import type { LaneLayout } from './lane-layout.ts';

/**
 * Largest |error| a decrypted slot may show and still be read as the integer nearest to it: what
 * {@link roundSlots} counts as an exact lane sum. The CKKS parameters are checked to keep the noise
 * of a sum well under it (crypto/ckks, `minScaleBits`).
 */
export const LANE_SUM_TOLERANCE = 0.25;

/**
 * Packs levels into slot values: parameter `j · lanesPerSlot + l` of the range goes to lane `l`
 * of slot `j`, i.e. slot j = Σ_l ℓ[j·L + l] · 2^(l·laneBits). The result is exact in float64
 * because it stays below 2^exactBits ≤ 2^52.
 *
 * @param levels unsigned levels, each in [0, 2^bits − 1] (checked).
 * @param start first index of `levels` to pack; `count` parameters from there.
 * @param out slot vector to fill (length ≥ ⌈count / L⌉); unused slots are zeroed.
 */
export function packLanes(
  levels: Uint8Array,
  start: number,
  count: number,
  layout: LaneLayout,
  out: Float64Array,
): Float64Array {
  const { lanesPerSlot: L, laneBits, bits } = layout;
  const needed = Math.ceil(count / L);
  if (needed > out.length) {
    throw new InvalidArgumentError(
      `${count} parameters need ${needed} slots, slot vector holds ${out.length}`,
    );
  }
  if (start < 0 || start + count > levels.length) {
    throw new InvalidArgumentError(
      `range [${start}, ${start + count}) outside levels of length ${levels.length}`,
    );
  }
  const maxLevel = 2 ** bits - 1;
  const factors = new Float64Array(L);
  for (let l = 0; l < L; l++) factors[l] = 2 ** (l * laneBits);
  const end = start + count;
  let p = start;
  for (let j = 0; j < needed; j++) {
    let v = 0;
    for (let l = 0; l < L && p < end; l++, p++) {
      const level = levels[p]!;
      if (level > maxLevel) {
        throw new InvalidArgumentError(`levels[${p}] is ${level}, ${bits}-bit levels stop at ${maxLevel}`);
      }
      v += level * factors[l]!;
    }
    out[j] = v;
  }
  out.fill(0, needed);
  return out;
}

/**
 * Rounds decrypted slot values to the nearest integers (into `out`) and returns how many were
 * farther than {@link LANE_SUM_TOLERANCE} from one: a sum of honest updates never is (their slots
 * are integers and CKKS noise is far smaller), so each one counted is a contribution that was not.
 * Rounding is deterministic: every site that decrypts the same aggregate gets the same integers.
 */
export function roundSlots(raw: Float64Array, out: Float64Array): number {
  if (out.length < raw.length) {
    throw new InvalidArgumentError(`out holds ${out.length} slots, raw has ${raw.length}`);
  }
  let noisy = 0;
  for (let j = 0; j < raw.length; j++) {
    const v = Math.round(raw[j]!) + 0; // + 0 turns −0 into 0
    if (!(Math.abs(raw[j]! - v) <= LANE_SUM_TOLERANCE)) noisy++;
    out[j] = Number.isFinite(v) ? v : 0;
  }
  return noisy;
}

/**
 * Unpacks integer slot sums into per-parameter lane sums, clamping instead of refusing: a slot is
 * first clamped into [0, 2^(lanesPerSlot · laneBits)), then each lane into [0, K · (2^bits − 1)]
 * for the `contributors` K. An honest sum needs no clamp; one that does holds a contribution
 * outside the honest range, whose effect the clamp bounds (every parameter's sum stays within what
 * K honest sites can send) without letting that one contribution stop the round. Returns how many
 * slots or lanes were clamped. Deterministic, so every decrypting site gets the same sums.
 *
 * @param integers slot sums already rounded ({@link roundSlots}).
 * @param count parameters to unpack; `out` receives them from `outStart`.
 */
export function clampLaneSums(
  integers: Float64Array,
  count: number,
  layout: LaneLayout,
  contributors: number,
  out: Float64Array,
  outStart = 0,
): number {
  const { lanesPerSlot: L, laneBits } = layout;
  if (!Number.isInteger(contributors) || contributors < 1 || contributors > layout.maxContributors) {
    throw new BlockRejectedError(
      'LANE_OVERFLOW',
      `${contributors} contributors exceed the lane headroom of ${layout.maxContributors}`,
    );
  }
  const needed = Math.ceil(count / L);
  if (needed > integers.length) {
    throw new InvalidArgumentError(`${count} parameters need ${needed} slots, got ${integers.length}`);
  }
  const honestMax = contributors * (2 ** layout.bits - 1);
  const slotMax = 2 ** (L * laneBits) - 1;
  const laneSize = 2 ** laneBits;
  let clamped = 0;
  let p = outStart;
  const end = outStart + count;
  for (let j = 0; j < needed; j++) {
    let v = integers[j]!;
    if (v < 0 || v > slotMax) {
      v = v < 0 ? 0 : slotMax;
      clamped++;
    }
    for (let l = 0; l < L && p < end; l++, p++) {
      let lane = v % laneSize;
      v = (v - lane) / laneSize;
      if (lane > honestMax) {
        lane = honestMax;
        clamped++;
      }
      out[p] = lane;
    }
  }
  return clamped;
}
