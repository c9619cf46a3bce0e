import { assertInteger } from '../errors/index.ts';

/** Rounds whose `switched` reports are remembered to tell a first report from a repeat. */
const KEPT_ROUNDS = 16;

interface CommitWatch {
  readonly round: number;
  /** The commit's YES voters: the sites that must switch to it. */
  readonly expected: ReadonlySet<string>;
  readonly switched: Set<string>;
  /** Metrics clock (ms) when the switch wait ends. */
  readonly settleAt: number;
}

/**
 * Version drift from the coordinator's events (docs/metrics.md). A COMMIT's YES voters must all
 * switch to it (drift is zero by construction); once `switchWaitMs` has passed since
 * the decision, every such voter that is still live and has not reported `switched` for that
 * commit is drifting. {@link drift} is that count for the latest commit whose wait has ended
 * (it falls as late reports come in); {@link missedTotal} adds, once per commit, the voters not
 * switched when its wait ended.
 *
 * It also tells a site's first `switched` for a round from a repeat (the report that only adds
 * the test accuracy), so the sync latency is observed once per site and commit.
 */
export class VersionDriftTracker {
  readonly #switchWaitMs: number;
  /** YES voters by round, until the round's decision. */
  readonly #yes = new Map<number, Set<string>>();
  readonly #reported = new Map<number, Set<string>>();
  #pending: CommitWatch | undefined;
  #settled: CommitWatch | undefined;
  #missedTotal = 0;

  /** @param switchWaitMs how long sites have to switch after a COMMIT (the coordinator's `switchWaitMs`), ms. */
  constructor(switchWaitMs: number) {
    assertInteger('switchWaitMs', switchWaitMs, 0, Number.MAX_SAFE_INTEGER);
    this.#switchWaitMs = switchWaitMs;
  }

  /** A counted vote. */
  vote(round: number, member: string, yes: boolean): void {
    if (!yes) return;
    let set = this.#yes.get(round);
    if (set === undefined) {
      set = new Set();
      this.#yes.set(round, set);
      while (this.#yes.size > KEPT_ROUNDS) this.#yes.delete(Math.min(...this.#yes.keys()));
    }
    set.add(member);
  }

  /**
   * The decision of `round` at `atMs`. A COMMIT starts the watch of its voters (the previous
   * commit's watch is settled first, with `isLive` as it is now).
   */
  decided(round: number, commit: boolean, atMs: number, isLive: (site: string) => boolean): void {
    const voters = this.#yes.get(round) ?? new Set<string>();
    this.#yes.delete(round);
    if (!commit) return;
    if (this.#pending !== undefined) this.#settle(this.#pending, isLive);
    // A fast site's `switched` can arrive before the coordinator emits the decision.
    this.#pending = {
      round,
      expected: voters,
      switched: new Set(this.#reported.get(round)),
      settleAt: atMs + this.#switchWaitMs,
    };
  }

  /** A `switched` of `member` for `round`; true on its first report for that round. */
  switched(round: number, member: string): boolean {
    let seen = this.#reported.get(round);
    if (seen === undefined) {
      seen = new Set();
      this.#reported.set(round, seen);
      while (this.#reported.size > KEPT_ROUNDS) this.#reported.delete(Math.min(...this.#reported.keys()));
    }
    const first = !seen.has(member);
    seen.add(member);
    for (const w of [this.#pending, this.#settled]) if (w?.round === round) w.switched.add(member);
    return first;
  }

  /** Sites drifting now (see the class); settles the pending commit once its wait is over at `nowMs`. */
  drift(nowMs: number, isLive: (site: string) => boolean): number {
    if (this.#pending !== undefined && nowMs >= this.#pending.settleAt) this.#settle(this.#pending, isLive);
    const w = this.#settled;
    if (w === undefined) return 0;
    return [...w.expected].filter((s) => !w.switched.has(s) && isLive(s)).length;
  }

  /** YES voters, summed over settled commits, that had not switched when the wait ended. */
  get missedTotal(): number {
    return this.#missedTotal;
  }

  #settle(w: CommitWatch, isLive: (site: string) => boolean): void {
    this.#missedTotal += [...w.expected].filter((s) => !w.switched.has(s) && isLive(s)).length;
    this.#settled = w;
    if (this.#pending === w) this.#pending = undefined;
  }
}
