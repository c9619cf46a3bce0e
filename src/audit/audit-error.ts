import { CohortError } from '../errors/index.ts';

/**
 * Stable codes of {@link AuditError}: an audit that could not run, or could not run whole. What an
 * audit finds in the log is not an error but an {@link AuditProblem} of its report.
 */
export const AUDIT_ERROR_CODES = [
  /** A bundle file that is not a well-formed audit bundle (magic, version, item bounds, trailer digest, item order). */
  'BUNDLE_INVALID',
  /** A bundle file that cannot be read or written (the OS error is the cause). */
  'BUNDLE_UNREADABLE',
  /** No keys to trust were named: no pinned registry in the configuration, no `--keys`, no `--registry-sha256`. */
  'AUDIT_TRUST_MISSING',
  /** A registry or genesis commit that is not the one the auditor pinned (another SHA-256 or hash). */
  'AUDIT_TRUST_MISMATCH',
  /** The log or the aggregate store could not be read (JetStream error, timeout, permissions); `cause` holds it. */
  'AUDIT_SOURCE_UNAVAILABLE',
  /** The audit ran but some checks could not be made (an aggregate store the credentials cannot read). */
  'AUDIT_INCOMPLETE',
] as const;

export type AuditErrorCode = (typeof AUDIT_ERROR_CODES)[number];

/** An audit could not run, or not completely; `details` name the file, object or sequence. */
export class AuditError extends CohortError {
  declare readonly code: AuditErrorCode;

  constructor(
    code: AuditErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
