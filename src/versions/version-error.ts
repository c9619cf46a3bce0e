import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link VersionError}; never renamed once released. */
export const VERSION_ERROR_CODES = [
  /** No commit with that hash is stored. */
  'COMMIT_UNKNOWN',
  /** Commit bytes that do not follow the format: bad magic, version, kind, length or shape. */
  'COMMIT_MALFORMED',
  /** A commit whose stored hash is not the hash of its fields. */
  'COMMIT_HASH_MISMATCH',
  /** A store file failed verification: bad header, checksum, name/content disagreement. */
  'STORE_CORRUPT',
  /** The file system refused a read, write, rename or sync (OS error as cause). */
  'STORE_IO',
  /** The store has no HEAD yet (`init` was never called). */
  'NOT_INITIALIZED',
  /** `init` was called on a store whose HEAD is a different commit. */
  'ALREADY_INITIALIZED',
  /** No prepared candidate for the round. */
  'NOT_PREPARED',
  /** The prepared candidate's commit hash is not the decided one. */
  'PREPARED_MISMATCH',
  /** A different candidate is already prepared for the round (abort it first). */
  'PREPARED_CONFLICT',
  /** A candidate's commit is not a child of the current HEAD. */
  'PARENT_MISMATCH',
  /** Parameters whose model hash is not the commit's `modelHash`. */
  'MODEL_MISMATCH',
  /** The model of a commit is not stored (pruned, or never written). */
  'MODEL_MISSING',
  /** The stored strategy state belongs to another commit than HEAD. */
  'STATE_STALE',
  /** `jumpTo` a commit whose height is not above HEAD's (a snapshot never moves a store back). */
  'JUMP_BACKWARDS',
] as const;

export type VersionErrorCode = (typeof VERSION_ERROR_CODES)[number];

/**
 * A model-version failure: an unknown or malformed commit, a corrupt or unreadable store, a
 * two-phase-commit step out of order. `details` names the file (`path`), commit or round involved.
 */
export class VersionError extends CohortError {
  declare readonly code: VersionErrorCode;

  constructor(
    code: VersionErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
