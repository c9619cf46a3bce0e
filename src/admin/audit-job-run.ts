import type { AdminApiEvents, AuditJobOutcome } from './admin-deps.ts';
import { AdminApiError } from './admin-error.ts';
import type { AuditJobSlot } from './audit-job-slots.ts';

/** A stop that is the API's own decision (the caller left, a bound was reached), not a failure. */
export type AuditJobStop = Extract<AuditJobOutcome, 'cancelled' | 'too_large' | 'timeout'>;

/**
 * One audit job of the API: its slot, the signal that stops it, its time bound, and its outcome,
 * reported once. Stopping (the caller left, a bound was reached) aborts the signal and frees the
 * slot at once; the job's producer kills its process on the signal.
 */
export class AuditJobRun {
  readonly kind: 'bundle' | 'verify';
  readonly #controller = new AbortController();
  readonly #slot: AuditJobSlot;
  readonly #events: AdminApiEvents;
  readonly #timeoutMs: number;
  readonly #timer: NodeJS.Timeout;
  #outcome: AuditJobOutcome | undefined;

  constructor(kind: 'bundle' | 'verify', slot: AuditJobSlot, timeoutMs: number, events: AdminApiEvents) {
    this.kind = kind;
    this.#slot = slot;
    this.#events = events;
    this.#timeoutMs = timeoutMs;
    this.#timer = setTimeout(
      () => this.stop('timeout', `the audit job passed its time bound (${timeoutMs} ms)`),
      timeoutMs,
    );
    this.#timer.unref();
    events.auditJobStarted?.(kind);
  }

  /** Aborted when the job is stopped. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** How it ended; undefined while it runs. */
  get outcome(): AuditJobOutcome | undefined {
    return this.#outcome;
  }

  /** Stops the job (the first outcome counts): aborts its signal with `why`, frees its slot. */
  stop(outcome: AuditJobStop, why: string): void {
    if (this.#outcome !== undefined) return;
    this.#finish(outcome);
    this.#controller.abort(new Error(why));
  }

  /** The job ended by itself, `completed` or `failed` (nothing if it was stopped before). */
  end(outcome: Extract<AuditJobOutcome, 'completed' | 'failed'>): void {
    if (this.#outcome === undefined) this.#finish(outcome);
  }

  /** What to answer for `err`, the job's failure: `AUDIT_TIMEOUT` when its time bound stopped it. */
  errorFor(err: unknown): unknown {
    this.end('failed');
    if (this.#outcome === 'timeout') {
      return new AdminApiError(
        'AUDIT_TIMEOUT',
        `the audit job passed its time bound (admin.audit.timeoutMs, ${this.#timeoutMs} ms)`,
      );
    }
    return err;
  }

  #finish(outcome: AuditJobOutcome): void {
    this.#outcome = outcome;
    clearTimeout(this.#timer);
    this.#slot.release();
    try {
      this.#events.auditJobEnded?.(this.kind, outcome);
    } catch {
      // counting never fails a job
    }
  }
}
