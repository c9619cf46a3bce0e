import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link ContributionError}; never renamed once released. */
export const CONTRIBUTION_ERROR_CODES = [
  /**
   * A contribution (or one of its frames) was not stored in the contributions stream: refused by
   * the stream (written before, too large, no stream), by permissions, or not acknowledged in time.
   * The aggregator then sends no partial for its round: the audit could not re-add it.
   */
  'CONTRIBUTION_NOT_STORED',
] as const;

export type ContributionErrorCode = (typeof CONTRIBUTION_ERROR_CODES)[number];

/** Storing a contribution failed; `details.subject` names the frame's subject. */
export class ContributionError extends CohortError {
  declare readonly code: ContributionErrorCode;

  constructor(
    code: ContributionErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
