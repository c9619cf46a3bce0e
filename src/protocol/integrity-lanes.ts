import { createHash } from 'node:crypto';
import { BlockRejectedError } from '../errors/index.ts';
import { CanonicalWriter } from './canonical-writer.ts';
import type { RoundContext } from './round-context.ts';

/** Bits of the round tag the integrity lanes carry. */
const TAG_BITS = 32;

/**
 * Lanes appended after a site's quantized parameters: one count lane holding 1, then the round
 * tag, `bits` per lane. Summed over K honest contributions of round r the count lane reads K and
 * each tag lane K·tag_r(i). An aggregator that adds a ciphertext twice while listing it once
 * shows K+1 in the count lane; one that substitutes an update of another round shows another
 * tag (caught with probability 1 − 2^−32). Both are checked by every site that decrypts.
 */
export function integrityLaneCount(bits: number): number {
  return 1 + Math.ceil(TAG_BITS / bits);
}

/** Lanes an update of `totalParams` parameters occupies: the parameters, then the integrity lanes. */
export function encodedLaneCount(totalParams: number, bits: number): number {
  return totalParams + integrityLaneCount(bits);
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

/** The integrity lanes' levels of one site's update in `context`: [1, tag…]. */
export function integrityLevels(
  bits: number,
  context: Pick<RoundContext, 'federation' | 'round'>,
): Uint8Array {
  const tag = tagLevels(bits, context);
  const out = new Uint8Array(1 + tag.length);
  out[0] = 1;
  out.set(tag, 1);
  return out;
}

/**
 * Checks the decrypted integrity lanes of an aggregate that lists `contributors` sites of
 * `context`'s round: the count lane must read exactly `contributors`, each tag lane exactly
 * `contributors` times the round's tag. Throws `INTEGRITY_MISMATCH` otherwise.
 *
 * @param laneSums the integer lane sums of the integrity lanes (length {@link integrityLaneCount}).
 */
export function checkIntegrityLanes(
  laneSums: ArrayLike<number>,
  bits: number,
  contributors: number,
  context: Pick<RoundContext, 'federation' | 'round'>,
): void {
  const expected = integrityLevels(bits, context);
  if (laneSums[0] !== contributors) {
    throw new BlockRejectedError(
      'INTEGRITY_MISMATCH',
      `the aggregate holds ${laneSums[0]} contributions, its contributor list ${contributors}: one was added twice or left out`,
    );
  }
  for (let i = 1; i < expected.length; i++) {
    if (laneSums[i] !== contributors * expected[i]!) {
      throw new BlockRejectedError(
        'INTEGRITY_MISMATCH',
        `the aggregate's round tag is not round ${context.round}'s: it holds an update of another round`,
      );
    }
  }
}
