/**
 * Why the API refused a request: the label of `cohort_admin_requests_refused_total`, fixed so every
 * series exists from the start. `RATE_LIMITED_TOKEN` is a token over its own budget;
 * `RATE_LIMITED_ADDRESS` an address over its budget of requests without a valid token;
 * `AUDIT_BUSY` a token asking for a second audit job while its first runs; `AUDIT_CAPACITY` every
 * audit slot taken; `OTHER` any other error answer (a conflict, a failed job).
 */
export const ADMIN_REFUSAL_REASONS = [
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'RATE_LIMITED_TOKEN',
  'RATE_LIMITED_ADDRESS',
  'AUDIT_BUSY',
  'AUDIT_CAPACITY',
  'VALIDATION_FAILED',
  'NOT_FOUND',
  'OTHER',
] as const;

/** One of {@link ADMIN_REFUSAL_REASONS}. */
export type AdminRefusalReason = (typeof ADMIN_REFUSAL_REASONS)[number];

/** The refusal reason of an error answer: its status, its code and (for a 429) which budget it spent. */
export function refusalReason(status: number, code: string, bucket?: unknown): AdminRefusalReason {
  if (code === 'RATE_LIMITED') return bucket === 'address' ? 'RATE_LIMITED_ADDRESS' : 'RATE_LIMITED_TOKEN';
  if ((ADMIN_REFUSAL_REASONS as readonly string[]).includes(code)) return code as AdminRefusalReason;
  if (status === 401) return 'UNAUTHENTICATED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 400) return 'VALIDATION_FAILED';
  if (status === 404) return 'NOT_FOUND';
  return 'OTHER';
}
