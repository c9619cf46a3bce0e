import { CohortError } from '../../errors/index.ts';

/** Stable codes of {@link StoreError}; never renamed once released. */
export const STORE_ERROR_CODES = [
  /** The object's declared size exceeds the caller's `maxBytes` (refused before any chunk is read). */
  'OBJECT_TOO_LARGE',
  /**
   * The object's meta or chunks are inconsistent: meta that is not valid JSON or misses a field,
   * size, chunk count or chunk size that disagree, a missing or extra chunk, a digest mismatch.
   */
  'OBJECT_CORRUPT',
  /** The object is valid but uses a feature this reader does not follow (a link to another object). */
  'OBJECT_UNSUPPORTED',
  /**
   * The store's stream does not exist: an object store's (`OBJ_<bucket>`) or a write-once object
   * stream (`COHORT_<F>_AGGREGATES`, `COHORT_<F>_SNAPSHOTS`).
   */
  'BUCKET_NOT_FOUND',
  /**
   * A stream exists with settings other than (weaker than) the ones its role needs: e.g. a
   * contributions stream that allows rollups, deletes, purges or overwrites. `details.problems`
   * lists every difference.
   */
  'STREAM_MISMATCH',
  /**
   * A write-once object stream already holds an object of that name with other bytes: a stored
   * object is never replaced (the same bytes again are a retry, and succeed).
   */
  'OBJECT_EXISTS',
  /** JetStream could not be reached or answered with an error (timeout, permissions, API error); `cause` holds it. */
  'STORE_UNAVAILABLE',
  /** Another holder has a live lease (after waiting `waitMs` for it to expire). */
  'LEASE_HELD',
  /** This holder's lease expired, was taken over, or was released; it must stop writing. */
  'LEASE_LOST',
  /** The lease key holds a value that is not a lease record (written by something else). */
  'LEASE_CORRUPT',
] as const;

export type StoreErrorCode = (typeof STORE_ERROR_CODES)[number];

/**
 * An object-store read or a lease operation failed or was refused. The message names the
 * bucket and the object or key; `details` carries them (never payload bytes).
 */
export class StoreError extends CohortError {
  declare readonly code: StoreErrorCode;

  constructor(
    code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
