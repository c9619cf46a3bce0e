import type { LoggedSnapshot } from '../federation-log/index.ts';

/** Which commits' snapshots a site may start from: heights in (`above`, `atOrBelow`]. */
export interface SnapshotRange {
  /** Only snapshots above this height (the store's head; -1 for an empty store). */
  readonly above: number;
  /** Only snapshots at or below this height (the commit wanted). */
  readonly atOrBelow: number;
}

/**
 * The logged snapshots a site may start from for `range`, in the order to try them: the highest
 * height first (the least to replay after it), and at one height in log order. Snapshots that
 * `refused` says were refused before are left out; a site tries the next one when one is refused,
 * and replays from its head (or genesis) when none is left.
 */
export function snapshotCandidates(
  snapshots: readonly LoggedSnapshot[],
  range: SnapshotRange,
  refused: (snapshot: LoggedSnapshot) => boolean = () => false,
): LoggedSnapshot[] {
  return snapshots
    .filter((s) => s.snapshot.height > range.above && s.snapshot.height <= range.atOrBelow && !refused(s))
    .sort((a, b) => b.snapshot.height - a.snapshot.height || a.entry.sequence - b.entry.sequence);
}
