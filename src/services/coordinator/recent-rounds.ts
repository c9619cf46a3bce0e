import type { RoundSummary } from './events.ts';

/**
 * Round summaries a coordinator keeps per run and in its own summary: the newest ones, enough for
 * the admin API's run detail and any test or bench run; the log holds every round.
 */
export const RECENT_ROUND_SUMMARIES = 256;

/**
 * Decided rounds as counts over all of them plus the summaries of the newest
 * {@link RECENT_ROUND_SUMMARIES}: a coordinator that runs for months keeps a bounded record.
 */
export class RecentRounds {
  #kept: RoundSummary[] = [];
  #decided = 0;
  #committed = 0;
  #lastCommit: RoundSummary | undefined;

  /** Records a decided round. */
  push(summary: RoundSummary): void {
    this.#decided++;
    if (summary.commit) {
      this.#committed++;
      this.#lastCommit = summary;
    }
    this.#kept.push(summary);
    // Drop in chunks so that a long run does not shift the array once per round.
    if (this.#kept.length >= 2 * RECENT_ROUND_SUMMARIES)
      this.#kept = this.#kept.slice(-RECENT_ROUND_SUMMARIES);
  }

  /** Every round decided so far. */
  get decided(): number {
    return this.#decided;
  }

  get committed(): number {
    return this.#committed;
  }

  get aborted(): number {
    return this.#decided - this.#committed;
  }

  /** The last COMMIT, if any. */
  get lastCommit(): RoundSummary | undefined {
    return this.#lastCommit;
  }

  /** Summaries of the newest rounds (at most {@link RECENT_ROUND_SUMMARIES}), oldest first. */
  recent(): RoundSummary[] {
    return this.#kept.slice(-RECENT_ROUND_SUMMARIES);
  }
}
