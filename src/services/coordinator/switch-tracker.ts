import { bytesEqual } from '../../../crypto/digest/index.ts';
import { BlockRejectedError } from '../../errors/index.ts';

/**
 * Commits whose `switched` reports are still accepted: a site switches within a round or two, or
 * catches up later and is then counted by its heartbeat, not by a report on a long-past commit.
 */
export const TRACKED_COMMITS = 64;

/** Switch latencies the summary's percentiles cover: the newest, over this run's commits. */
export const LATENCY_SAMPLES = 10_000;

interface SwitchRecord {
  readonly round: number;
  readonly height: number;
  /** Coordinator clock when the decision was published (or appended, for one read from the log). */
  readonly publishedAt: number;
  readonly commitHash: Uint8Array;
  /** Sites expected to switch (the YES voters). */
  readonly expected: ReadonlySet<string>;
  readonly latencies: Map<string, number>;
  readonly accuracies: Map<string, number>;
  /** Decided by this run (its latencies count in the summary). */
  readonly own: boolean;
}

/**
 * Parameter-sync latency and reported accuracy per committed round: from the decision's
 * publication to each site's `switched` (docs/metrics.md). A restarted coordinator seeds the record
 * of the log's last commit so the sites' `switched` for it are still accepted.
 */
export class SwitchTracker {
  /** The newest {@link TRACKED_COMMITS} commits, in the order tracked. */
  readonly #records = new Map<number, SwitchRecord>();
  /** Latencies of this run's commits, the newest {@link LATENCY_SAMPLES}: a ring from `#next`. */
  readonly #latencies: number[] = [];
  #next = 0;

  /** Starts tracking the switch to the commit of `round`. `own`: decided by this run. */
  track(
    round: number,
    commit: { hash: Uint8Array; height: number },
    expected: Iterable<string>,
    publishedAt: number,
    own = true,
  ): void {
    this.#records.set(round, {
      round,
      height: commit.height,
      publishedAt,
      commitHash: commit.hash,
      expected: new Set(expected),
      latencies: new Map(),
      accuracies: new Map(),
      own,
    });
    if (this.#records.size > TRACKED_COMMITS) this.#records.delete(this.#records.keys().next().value!);
  }

  /**
   * A verified `switched` of `site`. Returns the latency (measured on its first report; a repeat,
   * e.g. the report that carries the test accuracy, keeps it and has `first` false) and the
   * commit's height. Throws `WRONG_CONTEXT` for a commit this coordinator does not track.
   */
  switched(
    site: string,
    sw: { round: number; commitHash: Uint8Array; switchedUnixMs: number; testAccuracy: number },
  ): { latencyMs: number; first: boolean; height: number; accuracy: number | undefined } {
    const record = this.#records.get(sw.round);
    if (record === undefined || !bytesEqual(record.commitHash, sw.commitHash)) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${site} switched to a commit of round ${sw.round} this coordinator did not announce`,
      );
    }
    const first = !record.latencies.has(site);
    if (first) {
      const latency = Number.isFinite(sw.switchedUnixMs)
        ? Math.max(0, sw.switchedUnixMs - record.publishedAt)
        : 0;
      record.latencies.set(site, latency);
      if (record.own) this.#sample(latency);
    }
    const accuracy = Number.isFinite(sw.testAccuracy) && sw.testAccuracy >= 0 ? sw.testAccuracy : undefined;
    if (accuracy !== undefined) record.accuracies.set(site, accuracy);
    return { latencyMs: record.latencies.get(site)!, first, height: record.height, accuracy };
  }

  /**
   * Whether `round` has an accuracy report, or no site of this run has ever sent one (nobody
   * evaluates, so there is nothing to wait for).
   */
  accuracyReported(round: number): boolean {
    if (![...this.#records.values()].some((r) => r.accuracies.size > 0)) return true;
    return (this.#records.get(round)?.accuracies.size ?? 0) > 0;
  }

  /** Whether every expected site of `round` (that `stillLive` says is live) has switched. */
  allSwitched(round: number, stillLive: (site: string) => boolean = () => true): boolean {
    const r = this.#records.get(round);
    if (r === undefined) return true;
    return [...r.expected].every((s) => r.latencies.has(s) || !stillLive(s));
  }

  #sample(latency: number): void {
    if (this.#latencies.length < LATENCY_SAMPLES) this.#latencies.push(latency);
    else this.#latencies[this.#next] = latency;
    this.#next = (this.#next + 1) % LATENCY_SAMPLES;
  }

  /**
   * Latency percentiles over this run's commits (the newest {@link LATENCY_SAMPLES} switches) and
   * the latest reported mean accuracy.
   */
  summary(): {
    count: number;
    p50Ms: number | undefined;
    p99Ms: number | undefined;
    testAccuracy: number | undefined;
  } {
    const latencies = [...this.#latencies].sort((a, b) => a - b);
    let testAccuracy: number | undefined;
    for (const round of [...this.#records.keys()].sort((a, b) => b - a)) {
      const acc = [...this.#records.get(round)!.accuracies.values()];
      if (acc.length > 0) {
        testAccuracy = acc.reduce((a, b) => a + b, 0) / acc.length;
        break;
      }
    }
    return {
      count: latencies.length,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      testAccuracy,
    };
  }
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
