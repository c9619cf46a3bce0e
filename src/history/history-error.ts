import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link HistoryError}; never renamed once released. */
export const HISTORY_ERROR_CODES = [
  /** A commit reference that is none of the accepted forms (hex prefix, `HEAD`, `HEAD~n`, `@<height>`). */
  'REF_INVALID',
  /** A well-formed reference that names no commit on the log's chain. */
  'REF_UNKNOWN',
  /** A hash prefix shared by more than one commit on the chain. */
  'REF_AMBIGUOUS',
  /** No model store in the folder given (or defaulted to). */
  'STORE_ABSENT',
  /** An output file exists and overwriting it was not asked for. */
  'OUTPUT_EXISTS',
  /** An output file could not be written (the OS error is the cause). */
  'OUTPUT_UNWRITABLE',
] as const;

export type HistoryErrorCode = (typeof HISTORY_ERROR_CODES)[number];

/**
 * A question about the federation's history that cannot be answered as asked: a reference that
 * names no commit, or names several; a store that is not there. `details.ref` names the reference.
 */
export class HistoryError extends CohortError {
  declare readonly code: HistoryErrorCode;

  constructor(
    code: HistoryErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
