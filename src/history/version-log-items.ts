import type { ChainCommit } from '../services/federation-log/index.ts';
import type { FederationTimeline, TimelineRound } from './federation-timeline.ts';
import { type AbortJson, abortJson, type CommitJson, commitJson } from './version-json.ts';

/** One entry of `versions log`: a commit of the chain, or (with `all`) an ABORTed round. */
export type LogItem =
  | { readonly type: 'commit'; readonly commit: ChainCommit }
  | { readonly type: 'abort'; readonly round: TimelineRound };

/** The chain's commits, and with `all` the ABORTed rounds, newest (highest log sequence) first, at most `limit`. */
export function logItems(
  timeline: FederationTimeline,
  options: { all?: boolean; limit?: number } = {},
): LogItem[] {
  const items: (LogItem & { sequence: number })[] = timeline
    .commits()
    .map((commit) => ({ type: 'commit' as const, commit, sequence: commit.sequence }));
  if (options.all === true) {
    for (const round of timeline.rounds) {
      if (!round.decision.commit) items.push({ type: 'abort', round, sequence: round.sequence });
    }
  }
  items.sort((a, b) => b.sequence - a.sequence);
  return items.slice(0, options.limit ?? items.length).map(({ sequence: _, ...item }) => item as LogItem);
}

/** `versions log --json`: the items as {@link CommitJson} and {@link AbortJson} objects. */
export function logJson(timeline: FederationTimeline, items: readonly LogItem[]): (CommitJson | AbortJson)[] {
  return items.map((item) =>
    item.type === 'commit' ? commitJson(timeline, item.commit) : abortJson(item.round),
  );
}
