import { bytesEqual } from '../../crypto/digest/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import type { ChainCommit } from '../services/federation-log/index.ts';
import type { FederationTimeline, TimelineRound } from './federation-timeline.ts';

/** How a requested rollback ended: committed (the new commit), or aborted (the round's reason). */
export type RollbackOutcome =
  | { readonly outcome: 'commit'; readonly round: TimelineRound; readonly commit: ChainCommit }
  | { readonly outcome: 'abort'; readonly round: TimelineRound };

/**
 * The first round decided after log sequence `after` whose decision names `target` as its
 * rollback target (the coordinator records the target on the COMMIT and on the ABORT of a
 * rollback round), or undefined.
 */
export function findRollbackOutcome(
  timeline: FederationTimeline,
  target: Uint8Array,
  after: number,
): RollbackOutcome | undefined {
  for (const round of timeline.rounds) {
    if (round.sequence <= after || !bytesEqual(round.decision.rollbackTarget, target)) continue;
    if (!round.decision.commit) return { outcome: 'abort', round };
    return { outcome: 'commit', round, commit: timeline.history.commitAt(round.decision.height)! };
  }
  return undefined;
}

/** Options of {@link waitForRollbackOutcome}. */
export interface RollbackWaitOptions {
  readonly timeline: FederationTimeline;
  /** Reads the log's new entries into `timeline` (e.g. `() => syncTimeline(reader, timeline)`). */
  readonly sync: () => Promise<unknown>;
  /** Hash of the commit the rollback restores. */
  readonly target: Uint8Array;
  /** Log sequence when the rollback was requested: only later decisions count. */
  readonly after: number;
  /** Give up this long after the start, ms. */
  readonly timeoutMs: number;
  /** Pause between reads, ms (default 500). */
  readonly intervalMs?: number;
  /** Clock, ms (default `Date.now`). */
  readonly now?: () => number;
  /** Waits `ms` (default a timer). */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Reads the log every `intervalMs` until a decision on the rollback to `target` appears
 * ({@link findRollbackOutcome}) or `timeoutMs` pass; undefined on timeout. A log that stops
 * verifying throws as `sync` does.
 */
export async function waitForRollbackOutcome(
  options: RollbackWaitOptions,
): Promise<RollbackOutcome | undefined> {
  const intervalMs = options.intervalMs ?? 500;
  assertInteger('options.timeoutMs', options.timeoutMs, 0, Number.MAX_SAFE_INTEGER);
  assertInteger('options.intervalMs', intervalMs, 1, 3_600_000);
  if (typeof options.sync !== 'function') {
    throw new InvalidArgumentError('options.sync must be a function', { details: { name: 'options.sync' } });
  }
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const start = now();
  for (;;) {
    await options.sync();
    const found = findRollbackOutcome(options.timeline, options.target, options.after);
    if (found !== undefined) return found;
    const left = options.timeoutMs - (now() - start);
    if (left <= 0) return undefined;
    await sleep(Math.min(intervalMs, left));
  }
}
