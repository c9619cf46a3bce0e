import { sha256 } from '../../crypto/digest/index.ts';
import { encodeStrategyState, type StrategyState } from '../../federation/strategy/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { CanonicalWriter } from '../protocol/canonical-writer.ts';

/** Domain separator of {@link strategyStateHash}. */
export const STRATEGY_STATE_HASH_DOMAIN = 'cohort/v1/strategy-state';

/**
 * H(state): SHA-256 over `str('cohort/v1/strategy-state') ‖ u64(length) ‖ encodeStrategyState(state)`,
 * where `str` is a u32 big-endian length-prefixed UTF-8 string, `u64` is big-endian and `length`
 * is the byte length of the encoded state. The encoding is canonical (little-endian on every host,
 * float32 bit patterns as they are), so equal states hash equally on any host. Votes, commit
 * records and snapshots carry this hash; it never changes for a released state format.
 *
 * @returns 32 bytes.
 * @throws InvalidArgumentError (or UpdateError `UPDATE_NON_FINITE`) naming the field when `state`
 *   breaks a `StrategyState` invariant.
 */
export function strategyStateHash(state: StrategyState): Uint8Array {
  const bytes = encodeStrategyState(state);
  try {
    return strategyStateBytesHash(bytes);
  } finally {
    bytes.fill(0);
  }
}

/**
 * {@link strategyStateHash} of state bytes already encoded by `encodeStrategyState` (or checked by
 * `decodeStrategyState`, which accepts only canonical bytes). Internal to `src/versions`.
 */
export function strategyStateBytesHash(encoded: Uint8Array): Uint8Array {
  if (!(encoded instanceof Uint8Array)) {
    throw new InvalidArgumentError('encoded state must be a Uint8Array', { details: { name: 'encoded' } });
  }
  const prefix = new CanonicalWriter().str(STRATEGY_STATE_HASH_DOMAIN).u64(encoded.length).finish();
  return sha256(prefix, encoded);
}
