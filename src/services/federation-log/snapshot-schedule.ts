import type { DecisionBody } from '../../protocol/index.ts';

/**
 * The site that writes the snapshot of a commit at `height`, or undefined when none is due:
 * every `history.snapshotEvery` commits, and after every rollback (a site that joins later could
 * not rebuild a rolled-back model otherwise). The writer rotates over the commit's voters (all
 * voted YES), so one site does not carry every snapshot: voters sorted, index ⌊height / every⌋.
 *
 * The schedule is also who may write: the coordinator stores a snapshot of a height only from
 * this site (any other offer is refused `SNAPSHOT_NOT_SCHEDULED`), so a hostile site can hand in a
 * snapshot of a wrong model only for the heights it writes, and a joining site that refuses one
 * falls back to the snapshot below.
 */
export function snapshotWriter(decision: DecisionBody, height: number, every: number): string | undefined {
  if (every <= 0 || !decision.commit || decision.voters.length === 0) return undefined;
  if (height % every !== 0 && decision.kind !== 'rollback') return undefined;
  const voters = [...decision.voters].sort();
  return voters[Math.floor(height / every) % voters.length];
}
