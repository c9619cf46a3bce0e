import type { AuditJobRun } from './audit-job-run.ts';
import type { VerifiedJson } from './audit-verify-answer.ts';

/** An audit of the live log under way, and how many callers wait for it. */
interface Flight {
  readonly head: number;
  readonly run: AuditJobRun;
  readonly answer: Promise<VerifiedJson>;
  waiters: number;
}

/**
 * The audits of the live log, one per option (`aggregates` or not): the last answer is kept with
 * the log head (sequence) it was made at and answers every call at that head; callers while one
 * runs share it; when every caller of a running audit has left, it is stopped.
 */
export class AuditVerifyCache {
  readonly #last = new Map<boolean, { head: number; answer: VerifiedJson }>();
  readonly #flights = new Map<boolean, Flight>();

  /** The last answer for `skipAggregates` if it was made at log head `head`. */
  cached(skipAggregates: boolean, head: number): VerifiedJson | undefined {
    const hit = this.#last.get(skipAggregates);
    return hit?.head === head ? hit.answer : undefined;
  }

  /**
   * Joins the audit running for `skipAggregates`, or starts one with `start` (called only then:
   * it takes the job's slot and may throw), and resolves with its answer. `leave` is to be called
   * when the caller goes away before the answer.
   */
  join(
    skipAggregates: boolean,
    head: number,
    start: () => { run: AuditJobRun; answer: Promise<VerifiedJson> },
  ): { answer: Promise<VerifiedJson>; leave: () => void } {
    let flight = this.#flights.get(skipAggregates);
    if (flight === undefined) {
      const started = start();
      const f: Flight = { head, run: started.run, answer: started.answer, waiters: 0 };
      flight = f;
      this.#flights.set(skipAggregates, f);
      f.answer.then(
        (answer) => {
          f.run.end('completed');
          this.#last.set(skipAggregates, { head: f.head, answer });
        },
        () => f.run.end('failed'),
      );
      const forget = () => {
        if (this.#flights.get(skipAggregates) === f) this.#flights.delete(skipAggregates);
      };
      f.answer.then(forget, forget);
    }
    const f = flight;
    f.waiters++;
    let left = false;
    return {
      answer: f.answer,
      leave: () => {
        if (left) return;
        left = true;
        f.waiters--;
        if (f.waiters === 0) f.run.stop('cancelled', 'every caller of the audit left');
      },
    };
  }
}
