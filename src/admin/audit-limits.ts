import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { ADMIN_SCOPES, type AdminScope } from './scopes.ts';

/** Bounds of the API's audit work (`admin.audit`): bundle exports and audits of the live log. */
export interface AdminAuditLimits {
  /**
   * Audit jobs at once across all tokens (each in a process of its own); a token runs one at a
   * time. Beyond: 429 `AUDIT_BUSY` (that token), 503 `AUDIT_CAPACITY` (all), with `Retry-After`.
   */
  readonly maxJobs: number;
  /** Largest bundle served, bytes: the answer stops there (no trailer: no reader accepts it). */
  readonly maxBundleBytes: number;
  /** Longest a job may run, ms (a bundle until its last byte is read): then it is stopped. */
  readonly timeoutMs: number;
  /**
   * The narrowest scope that may export the stored contributions of a `plain`-mode federation,
   * which are the sites' updates in the clear: `admin` by default; `operator` or `auditor` is an
   * explicit opt-in. In `he` mode they are ciphertexts and every scope that may export a bundle
   * gets them.
   */
  readonly plainContributions: AdminScope;
}

/** Defaults of {@link AdminAuditLimits}. */
export const DEFAULT_AUDIT_LIMITS: AdminAuditLimits = Object.freeze({
  maxJobs: 2,
  maxBundleBytes: 1024 * 1024 * 1024,
  timeoutMs: 15 * 60_000,
  plainContributions: 'admin',
});

/** Most audit jobs at once that may be configured (each is a process). */
export const MAX_AUDIT_JOBS = 16;

/**
 * `partial` over {@link DEFAULT_AUDIT_LIMITS}, checked.
 *
 * @throws InvalidArgumentError naming the field out of range.
 */
export function auditLimitsOf(partial: Partial<AdminAuditLimits> | undefined): AdminAuditLimits {
  const limits: AdminAuditLimits = { ...DEFAULT_AUDIT_LIMITS, ...partial };
  assertInteger('audit.maxJobs', limits.maxJobs, 1, MAX_AUDIT_JOBS);
  assertInteger('audit.maxBundleBytes', limits.maxBundleBytes, 1024, Number.MAX_SAFE_INTEGER);
  assertInteger('audit.timeoutMs', limits.timeoutMs, 1, 24 * 3_600_000);
  if (!(ADMIN_SCOPES as readonly string[]).includes(limits.plainContributions)) {
    throw new InvalidArgumentError(`audit.plainContributions must be one of ${ADMIN_SCOPES.join(', ')}`, {
      details: { name: 'audit.plainContributions' },
    });
  }
  return Object.freeze(limits);
}
