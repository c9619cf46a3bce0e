import { createCipheriv, createDecipheriv } from 'node:crypto';
import { assertLength, InvalidArgumentError } from '../errors/index.ts';
import { SnapshotError } from './snapshot-error.ts';

/** Bytes of the federation data key (AES-256). */
export const DATA_KEY_BYTES = 32;

/** Bytes of the AES-GCM authentication tag that ends a snapshot's ciphertext. */
export const SNAPSHOT_TAG_BYTES = 16;

/** Throws `INVALID_ARGUMENT` naming `name` unless `key` is a 32-byte Uint8Array. */
export function assertDataKey(name: string, key: unknown): asserts key is Uint8Array {
  if (!(key instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${name} must be a Uint8Array`, { details: { name } });
  }
  assertLength(name, key.length, DATA_KEY_BYTES, 'a federation data key is');
}

/**
 * AES-256-GCM (node:crypto) of the concatenation of `parts` under `dataKey` and `nonce`, with `aad`
 * as associated data. Returns the ciphertext pieces followed by the 16-byte tag; their total length
 * is the plaintext length + 16. `parts` are neither kept nor modified (the caller wipes them).
 */
export function sealParts(
  dataKey: Uint8Array,
  nonce: Uint8Array,
  aad: Uint8Array,
  parts: readonly Uint8Array[],
): Uint8Array[] {
  const cipher = createCipheriv('aes-256-gcm', dataKey, nonce, { authTagLength: SNAPSHOT_TAG_BYTES });
  cipher.setAAD(aad);
  const out: Uint8Array[] = [];
  for (const part of parts) {
    if (part.length > 0) out.push(cipher.update(part));
  }
  out.push(cipher.final(), cipher.getAuthTag());
  return out;
}

/**
 * Inverse of {@link sealParts} over `sealed` (ciphertext ‖ tag). Plaintext released before the tag
 * check is wiped on failure.
 *
 * @returns the plaintext; the caller owns and wipes it.
 * @throws SnapshotError `SNAPSHOT_DECRYPT_FAILED` (wrong key, tampered ciphertext, tag or
 *   associated data: indistinguishable by design).
 */
export function openSealed(
  dataKey: Uint8Array,
  nonce: Uint8Array,
  aad: Uint8Array,
  sealed: Uint8Array,
): Uint8Array {
  const body = sealed.subarray(0, sealed.length - SNAPSHOT_TAG_BYTES);
  const tag = sealed.subarray(sealed.length - SNAPSHOT_TAG_BYTES);
  let plain: Buffer | undefined;
  let final: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, nonce, { authTagLength: SNAPSHOT_TAG_BYTES });
    decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    plain = decipher.update(body);
    final = decipher.final();
  } catch (cause) {
    plain?.fill(0);
    throw new SnapshotError(
      'SNAPSHOT_DECRYPT_FAILED',
      'snapshot ciphertext does not decrypt under this data key (wrong key or tampered ciphertext)',
      { cause },
    );
  }
  if (final.length === 0) return plain;
  // GCM is a stream mode, so `final` is empty in practice; concatenate if an implementation differs.
  const out = new Uint8Array(plain.length + final.length);
  out.set(plain, 0);
  out.set(final, plain.length);
  plain.fill(0);
  final.fill(0);
  return out;
}
