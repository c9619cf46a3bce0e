import { assertInteger } from '../errors/index.ts';
import { AdminApiError } from './admin-error.ts';

/** Seconds a refused audit request is told to wait (`Retry-After`). */
export const AUDIT_RETRY_AFTER_S = 10;

/** A taken slot; {@link AuditJobSlot.release} frees it (once; later calls do nothing). */
export interface AuditJobSlot {
  release(): void;
}

/**
 * Who runs audit jobs now: at most one per token and `maxJobs` in all. Taking a slot is
 * synchronous, so two requests cannot both pass the check.
 */
export class AuditJobSlots {
  readonly maxJobs: number;
  readonly #byToken = new Set<string>();

  constructor(maxJobs: number) {
    assertInteger('maxJobs', maxJobs, 1, 1024);
    this.maxJobs = maxJobs;
  }

  /** Jobs running now. */
  get running(): number {
    return this.#byToken.size;
  }

  /**
   * A slot for `tokenId`'s job.
   *
   * @throws AdminApiError `AUDIT_BUSY` (429) when the token runs a job already, `AUDIT_CAPACITY`
   *   (503) when `maxJobs` run; both with `details.retryAfterS`.
   */
  acquire(tokenId: string): AuditJobSlot {
    if (this.#byToken.has(tokenId)) {
      throw new AdminApiError(
        'AUDIT_BUSY',
        `token ${tokenId} runs an audit job already: one at a time per token`,
        { details: { retryAfterS: AUDIT_RETRY_AFTER_S } },
      );
    }
    if (this.#byToken.size >= this.maxJobs) {
      throw new AdminApiError(
        'AUDIT_CAPACITY',
        `${this.maxJobs} audit job(s) run already (admin.audit.maxJobs): retry later`,
        { details: { retryAfterS: AUDIT_RETRY_AFTER_S } },
      );
    }
    this.#byToken.add(tokenId);
    let held = true;
    return {
      release: () => {
        if (held) this.#byToken.delete(tokenId);
        held = false;
      },
    };
  }
}
