import type { FederationLogReader } from '../services/federation-log/index.ts';
import type { Commit } from '../versions/index.ts';
import { FederationTimeline } from './federation-timeline.ts';

/**
 * Reads the whole log through `reader` (signatures, federation and sequence of every entry, the
 * hash chain) and folds it into a fresh {@link FederationTimeline} from `genesis` (the history's
 * rules). An empty or absent log gives the genesis alone.
 *
 * @throws FederationLogError `LOG_ENTRY_INVALID`, `LOG_CHAIN_BROKEN` or `LOG_HISTORY_INVALID` for a
 *   log that does not verify (naming the entry); `LOG_UNAVAILABLE` when it cannot be read.
 */
export async function readTimeline(
  reader: FederationLogReader,
  genesis: Commit,
): Promise<FederationTimeline> {
  const timeline = new FederationTimeline(genesis, reader.stream);
  await syncTimeline(reader, timeline);
  return timeline;
}

/** Reads and folds in the entries after `timeline`'s position; returns how many. Throws like {@link readTimeline}. */
export async function syncTimeline(
  reader: FederationLogReader,
  timeline: FederationTimeline,
): Promise<number> {
  let n = 0;
  for await (const entry of reader.entries(timeline.position)) {
    timeline.apply(entry);
    n++;
  }
  return n;
}
