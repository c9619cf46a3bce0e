import type { DecisionBody } from '../../protocol/index.ts';
import { epochAt } from '../../round/index.ts';
import type { LogHistory } from './log-history.ts';

/**
 * Threshold keys: what a re-shared key epoch asks of the snapshot schedule at a commit. Its
 * snapshots are encrypted under the epoch's own data key, which only its roster holds, so the
 * writer is one of the commit's voters in the roster; and the epoch's first commit always has a
 * snapshot, so that a site enrolled into the epoch (it holds no data key of the epochs before)
 * can join from it.
 */
export interface SnapshotEpoch {
  /** The commit is the first of the epoch on the chain. */
  readonly first: boolean;
  /** The epoch's roster. */
  readonly sites: readonly string[];
}

/**
 * The re-shared epoch of the commit at `height` as the snapshot schedule sees it, or undefined
 * (a shared key, or the key ceremony's epoch: the federation data key, held by every site).
 */
export function snapshotEpochOf(history: LogHistory, height: number): SnapshotEpoch | undefined {
  const cc = history.commitAt(height);
  if (cc === undefined) return undefined;
  const epoch = epochAt(undefined, history.thresholdEpochs, cc.commit.round);
  if (epoch === undefined) return undefined;
  const parent = history.commitAt(height - 1);
  return {
    first: parent === undefined || parent.commit.round < epoch.fromRound,
    sites: epoch.roster.sites.map((s) => s.id),
  };
}

/**
 * The site that writes the snapshot of a commit at `height`, or undefined when none is due:
 * every `history.snapshotEvery` commits, after every rollback (a site that joins later could
 * not rebuild a rolled-back model otherwise), and at the first commit of a re-shared key epoch
 * (`epoch`, {@link SnapshotEpoch}). The writer rotates over the commit's voters (all
 * voted YES), so one site does not carry every snapshot: voters sorted, index ⌊height / every⌋.
 *
 * The schedule is also who may write: the coordinator stores a snapshot of a height only from
 * this site (any other offer is refused `SNAPSHOT_NOT_SCHEDULED`), so a hostile site can hand in a
 * snapshot of a wrong model only for the heights it writes, and a joining site that refuses one
 * falls back to the snapshot below.
 */
export function snapshotWriter(
  decision: DecisionBody,
  height: number,
  every: number,
  epoch?: SnapshotEpoch,
): string | undefined {
  if (every <= 0 || !decision.commit || decision.voters.length === 0) return undefined;
  if (height % every !== 0 && decision.kind !== 'rollback' && epoch?.first !== true) return undefined;
  const voters = decision.voters.filter((v) => epoch === undefined || epoch.sites.includes(v)).sort();
  if (voters.length === 0) return undefined;
  return voters[Math.floor(height / every) % voters.length];
}
