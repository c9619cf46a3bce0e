import { sha256 } from '../../crypto/digest/index.ts';
import { assertFiniteArray, InvalidArgumentError } from '../errors/index.ts';
import { CanonicalWriter } from '../protocol/canonical-writer.ts';
import { float32ToLeBytes } from './float32-le.ts';

/** Domain separator of {@link modelHash}. */
export const MODEL_HASH_DOMAIN = 'cohort/v1/model';

/**
 * H(w): SHA-256 over the canonical string `str('cohort/v1/model') ‖ u64(length) ‖ w` where `str` is
 * a u32 big-endian length-prefixed UTF-8 string, `u64` is big-endian and `w` is the parameters as
 * little-endian float32 (bit patterns as they are, so −0 and 0 differ). Two agents holding the same
 * model compute the same hash on any host.
 *
 * @throws InvalidArgumentError unless `parameters` is a Float32Array.
 * @throws UpdateError `UPDATE_NON_FINITE` naming the first NaN/±Infinity entry.
 */
export function modelHash(parameters: Float32Array): Uint8Array {
  if (!(parameters instanceof Float32Array)) {
    throw new InvalidArgumentError('parameters must be a Float32Array', { details: { name: 'parameters' } });
  }
  assertFiniteArray('parameters', parameters);
  const prefix = new CanonicalWriter().str(MODEL_HASH_DOMAIN).u64(parameters.length).finish();
  return sha256(prefix, float32ToLeBytes(parameters));
}
