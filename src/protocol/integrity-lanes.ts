import { createHash } from 'node:crypto';
import { BlockRejectedError } from '../errors/index.ts';
import { CanonicalWriter } from './canonical-writer.ts';
import type { RoundContext } from './round-context.ts';

/** Bits of the round tag the integrity lanes carry. */
const TAG_BITS = 32;

/**
 * Where a site's update marks its presence: lane `index` of `participants` presence lanes (its
 * place in the RoundOpen's assignments, and their number). Tools and tests that sum updates outside
 * a round use {@link SOLE_POSITION}: one presence lane that then counts the contributions.
 */
export interface LanePosition {
  readonly index: number;
  readonly participants: number;
}

/** One presence lane shared by every update: it reads the number of contributions. */
export const SOLE_POSITION: LanePosition = Object.freeze({ index: 0, participants: 1 });

/**
 * Lanes appended after a site's quantized parameters: `participants` presence lanes (1 in the
 * site's own, 0 elsewhere), then the round tag, `bits` per lane. Summed over the contributions of
 * round r, presence lane i reads how many times participant i's update is in the sum and each tag
 * lane K·tag_r(i). An aggregator that adds an update twice, leaves a listed one out, or puts another
 * site's update (of any round) in a listed site's place changes a presence lane; one that
 * substitutes an update of another round changes the tag (caught with probability 1 − 2^−32).
 * Every site that decrypts checks both.
 */
export function integrityLaneCount(bits: number, participants = 1): number {
  return participants + Math.ceil(TAG_BITS / bits);
}

/** Lanes an update of `totalParams` parameters occupies: the parameters, then the integrity lanes. */
export function encodedLaneCount(totalParams: number, bits: number, participants = 1): number {
  return totalParams + integrityLaneCount(bits, participants);
}

/** The round tag's levels, `bits` per lane: from SHA-256 of the federation and the round. */
function tagLevels(bits: number, context: Pick<RoundContext, 'federation' | 'round'>): Uint8Array {
  const canonical = new CanonicalWriter().str(context.federation).u64(context.round).finish();
  const digest = createHash('sha256').update('cohort/v1/round-tag\0').update(canonical).digest();
  const tag = digest.readUInt32BE(0);
  const lanes = Math.ceil(TAG_BITS / bits);
  const out = new Uint8Array(lanes);
  const mask = 2 ** bits - 1;
  for (let i = 0; i < lanes; i++) out[i] = Math.floor(tag / 2 ** (i * bits)) & mask;
  return out;
}

/** The integrity lanes' levels of one site's update in `context`: presence (1 at its index), then the tag. */
export function integrityLevels(
  bits: number,
  context: Pick<RoundContext, 'federation' | 'round'>,
  position: LanePosition = SOLE_POSITION,
): Uint8Array {
  const { index, participants } = position;
  if (
    !Number.isInteger(participants) ||
    participants < 1 ||
    !Number.isInteger(index) ||
    index < 0 ||
    index >= participants
  ) {
    throw new BlockRejectedError('BAD_HEADER', `lane position ${index} of ${participants} participants`);
  }
  const tag = tagLevels(bits, context);
  const out = new Uint8Array(participants + tag.length);
  out[index] = 1;
  out.set(tag, participants);
  return out;
}

/**
 * Checks the decrypted integrity lanes of an aggregate of `context`'s round: presence lane i must
 * read exactly `presence[i]` (how many listed contributors hold position i: 1 for each listed
 * participant, 0 for the others; with one shared lane, the number of contributions), and each tag
 * lane the number of contributions times the round's tag. Throws `INTEGRITY_MISMATCH` otherwise,
 * naming the lane through `describe` when given.
 *
 * @param laneSums the integer lane sums of the integrity lanes (length {@link integrityLaneCount}).
 */
export function checkIntegrityLanes(
  laneSums: ArrayLike<number>,
  bits: number,
  presence: readonly number[],
  context: Pick<RoundContext, 'federation' | 'round'>,
  describe: (lane: number) => string = (lane) => `participant ${lane}`,
): void {
  const contributions = presence.reduce((a, b) => a + b, 0);
  presence.forEach((expected, lane) => {
    const got = laneSums[lane];
    if (got !== expected) {
      throw new BlockRejectedError(
        'INTEGRITY_MISMATCH',
        `the aggregate holds ${got} update(s) of ${describe(lane)}, its contributor list ${expected}: one was added twice, left out or swapped`,
      );
    }
  });
  const tag = tagLevels(bits, context);
  tag.forEach((t, i) => {
    if (laneSums[presence.length + i] !== contributions * t) {
      throw new BlockRejectedError(
        'INTEGRITY_MISMATCH',
        `the aggregate's round tag is not round ${context.round}'s: it holds an update of another round`,
      );
    }
  });
}
