import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link SnapshotError}; never renamed once released. */
export const SNAPSHOT_ERROR_CODES = [
  /** The snapshot is larger than the reader's `maxBytes` (checked before anything is parsed). */
  'SNAPSHOT_TOO_LARGE',
  /** Bytes that do not follow the format: truncated, bad magic, version, lengths or header fields. */
  'SNAPSHOT_MALFORMED',
  /** The signer is unknown, or its registered key has another key id or algorithm. */
  'SNAPSHOT_WRONG_SIGNER',
  /** The signature does not verify over the header under the signer's key. */
  'SNAPSHOT_BAD_SIGNATURE',
  /** The SHA-256 of the ciphertext is not the one the header records. */
  'SNAPSHOT_DIGEST_MISMATCH',
  /** AES-256-GCM refused the ciphertext: wrong data key, or tampering the digest cannot see. */
  'SNAPSHOT_DECRYPT_FAILED',
  /** The decrypted parameters do not hash to the expected model hash. */
  'SNAPSHOT_MODEL_MISMATCH',
  /** The decrypted strategy state does not hash to the header's (or the expected) state hash. */
  'SNAPSHOT_STATE_MISMATCH',
  /** A verified snapshot of another federation, commit, model or state than the one expected. */
  'SNAPSHOT_CONTEXT',
] as const;

export type SnapshotErrorCode = (typeof SNAPSHOT_ERROR_CODES)[number];

/**
 * A model snapshot was refused. `details` names the field or the sizes involved; never key material
 * or plaintext.
 */
export class SnapshotError extends CohortError {
  declare readonly code: SnapshotErrorCode;

  constructor(
    code: SnapshotErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
