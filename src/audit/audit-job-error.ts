import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link AuditJobError}. */
export const AUDIT_JOB_ERROR_CODES = [
  /** The audit process ended without an answer: it crashed, ran out of memory, or could not start. */
  'AUDIT_JOB_FAILED',
  /** The job was stopped by its caller (the client left, a time or size bound was reached). */
  'AUDIT_JOB_ABORTED',
] as const;

export type AuditJobErrorCode = (typeof AUDIT_JOB_ERROR_CODES)[number];

/**
 * An audit job run in a child process ({@link startAuditBundleJob}, {@link runAuditVerifyJob})
 * did not finish; `details` hold the process's exit code or signal and the end of its stderr.
 */
export class AuditJobError extends CohortError {
  declare readonly code: AuditJobErrorCode;

  constructor(
    code: AuditJobErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
