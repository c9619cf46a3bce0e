import { CohortError } from '../../errors/index.ts';

/** Stable codes of {@link FederationLogError}; never renamed once released. */
export const FEDERATION_LOG_ERROR_CODES = [
  /** Another writer appended since this writer's start-up scan (expected-last-sequence check failed). */
  'LOG_SEQUENCE_CONFLICT',
  /** This writer lost a sequence race earlier: it never appends again (one writer per log). */
  'LOG_FENCED',
  /** An entry is missing, or its `previousEntry` is not the SHA-256 of the entry before it. */
  'LOG_CHAIN_BROKEN',
  /** An entry is not a log record signed by the coordinator, or claims another sequence or federation. */
  'LOG_ENTRY_INVALID',
  /** The entries break the history's rules: round order, parent links, heights, commit hashes. */
  'LOG_HISTORY_INVALID',
  /** The stream exists with settings other than the log needs (storage, replicas, deny delete, …). */
  'LOG_STREAM_MISMATCH',
  /** The log holds less than this coordinator appended, or less than members have committed. */
  'LOG_BEHIND',
  /** The log could not be read or written (JetStream API error, timeout); `cause` holds it. */
  'LOG_UNAVAILABLE',
  /**
   * An earlier append reported `LOG_UNAVAILABLE` landed after all, where this record would have
   * gone: the writer took it in and appended nothing for this record (build it again and retry).
   */
  'LOG_LATE_ENTRY',
] as const;

export type FederationLogErrorCode = (typeof FEDERATION_LOG_ERROR_CODES)[number];

/** The federation log refused or failed an operation; `details` name the sequence or setting. */
export class FederationLogError extends CohortError {
  declare readonly code: FederationLogErrorCode;

  constructor(
    code: FederationLogErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
