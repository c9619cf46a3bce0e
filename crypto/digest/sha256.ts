import { createHash } from 'node:crypto';

/**
 * SHA-256 (FIPS 180-4) of the concatenation of `parts`, without materializing the
 * concatenation. Returns a fresh 32-byte array.
 */
export function sha256(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  // Copy out of the Buffer so callers get a plain Uint8Array (structural equality in tests, no pool aliasing).
  return new Uint8Array(hash.digest());
}

/** {@link sha256} of the concatenation of `parts`, as 64 lowercase hex characters. */
export function sha256Hex(...parts: Uint8Array[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}
