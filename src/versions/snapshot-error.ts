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
  /**
   * The SHA-256 of the ciphertext is not the one the header records, or (a joining site) the
   * stored snapshot's SHA-256 is not the one the federation log records for it.
   */
  'SNAPSHOT_DIGEST_MISMATCH',
  /** AES-256-GCM refused the ciphertext: wrong data key, or tampering the digest cannot see. */
  'SNAPSHOT_DECRYPT_FAILED',
  /** The decrypted parameters do not hash to the expected model hash. */
  'SNAPSHOT_MODEL_MISMATCH',
  /** The decrypted strategy state does not hash to the header's (or the expected) state hash. */
  'SNAPSHOT_STATE_MISMATCH',
  /** A verified snapshot of another federation, commit, model or state than the one expected. */
  'SNAPSHOT_CONTEXT',
  /**
   * Offered by a site that is not the one scheduled to write the snapshot of that height (one
   * site per snapshot height, the commit's voters in turn: `snapshotWriter`), or for a height no
   * snapshot is due at.
   */
  'SNAPSHOT_NOT_SCHEDULED',
] as const;

export type SnapshotErrorCode = (typeof SNAPSHOT_ERROR_CODES)[number];

/**
 * A model snapshot was refused. `details` names the field or the sizes involved; never key material
 * or plaintext. A refusal of the content of a snapshot whose signature verified (`openSnapshot`:
 * `SNAPSHOT_CONTEXT`, `SNAPSHOT_DECRYPT_FAILED`, `SNAPSHOT_STATE_MISMATCH`, `SNAPSHOT_MODEL_MISMATCH`,
 * `SNAPSHOT_MALFORMED` of the plaintext) names the signer in `details.signedBy`: that member signed
 * what was refused. (`details.signer` of the other codes is the signer a header claims, unverified.)
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
