import {
  type DecisionBody,
  decodeStatisticsParams,
  type ExclusionRecord,
  standardizerFromTotals,
} from '../protocol/index.ts';
import type { RoundParams } from '../round/index.ts';
import type { ChainCommit } from '../services/federation-log/index.ts';
import { bytesToHex, type CommitKind } from '../versions/index.ts';
import { commitRoundParams } from './commit-params.ts';
import type { FederationTimeline, TimelineRound } from './federation-timeline.ts';

/** A round's contributor as the JSON output shows it. */
export interface ContributorJson {
  site: string;
  /** The site's update digest, hex. */
  digest: string;
  weight: number;
}

/**
 * One commit of the chain in `versions log --json` and `versions show --json`. Hashes are lowercase
 * hex. Genesis has `sequence` and `unixMs` null, no contributors, voters or missing.
 */
export interface CommitJson {
  /** The commit hash. */
  hash: string;
  height: number;
  round: number;
  kind: CommitKind;
  /** Parent commit hash (64 zeros for genesis). */
  parent: string;
  /** H(w′) of the commit's model. */
  modelHash: string;
  /** Strategy state hash the voters agreed on (null for genesis or when the decision names none). */
  stateHash: string | null;
  /** The round's aggregate digest (64 zeros for genesis and rollbacks). */
  aggregateDigest: string;
  /** Sites summed into the round's aggregate, sorted by site (empty for genesis and rollbacks). */
  contributors: ContributorJson[];
  /** Members that voted. */
  voters: string[];
  /** Members expected to vote that did not. */
  missing: string[];
  /** Log sequence of the decision that committed it (null for genesis). */
  sequence: number | null;
  /** The coordinator's clock when that decision was appended, ms since the epoch (null for genesis). */
  unixMs: number | null;
  /** Rollbacks: the commit whose model this one restores (null otherwise). */
  rollbackTarget: string | null;
  /** Rollbacks: the height of that commit (null otherwise). */
  rollbackTargetHeight: number | null;
}

/** An ABORTed round in `versions log --all --json`. */
export interface AbortJson {
  kind: 'abort';
  round: number;
  reason: string;
  /** The head the round was based on, and its height. */
  parent: string;
  height: number;
  voters: string[];
  missing: string[];
  sequence: number;
  unixMs: number;
  /** An aborted rollback round: the commit it would have restored (null otherwise). */
  rollbackTarget: string | null;
}

/** A snapshot the log recorded for a commit. */
export interface SnapshotJson {
  /** Log sequence of the snapshot record. */
  sequence: number;
  unixMs: number;
  /** Object-store name of the encrypted snapshot. */
  object: string;
  /** SHA-256 of the stored object, hex. */
  digest: string;
  bytes: number;
  /** The site that wrote it. */
  site: string;
}

/** `versions show --json`: {@link CommitJson} and everything its decision recorded. */
export interface ShowJson extends CommitJson {
  /** The commit's round parameters decoded (`decodeRoundParams`); null when they do not decode. */
  params: RoundParams | null;
  /** The raw params bytes, hex. */
  paramsHex: string;
  /** The round's stored aggregate (round commits). */
  aggregate: {
    object: string;
    objectBytes: number;
    totalWeight: number;
    participants: number;
    totalExamples: number;
  } | null;
  /** The exclusion table recorded with the decision (empty for genesis). */
  exclusions: ExclusionRecord[];
  /** The clip the decision set for the next round (null for genesis). */
  nextClip: number | null;
  /** Snapshots the log recorded of this commit, in log order. */
  snapshots: SnapshotJson[];
  /**
   * A statistics commit: the federation's feature statistics its params bind (rows, per-feature
   * means and population deviations every site standardizes with); null for other commits.
   */
  statistics: { rows: number; mean: number[]; std: number[] } | null;
  /**
   * The federated evaluation its decision records: the round's participants' totals on their
   * validation rows for the model the round started from (`model`, the parent); null without.
   */
  evaluation: {
    model: string;
    examples: number;
    correct: number;
    lossSum: number;
    classes: number;
    confusion: number[];
  } | null;
}

/** The contributors a decision's aggregate names. */
export function contributorsJson(decision: DecisionBody | null): ContributorJson[] {
  return (decision?.aggregate?.contributors ?? []).map((c) => ({
    site: c.site,
    digest: bytesToHex(c.digest),
    weight: c.weight,
  }));
}

/** The {@link CommitJson} of a chain commit. */
export function commitJson(timeline: FederationTimeline, c: ChainCommit): CommitJson {
  const commit = c.commit;
  const d = c.decision;
  const target =
    commit.kind === 'rollback' && d !== null ? timeline.history.commitByHash(d.rollbackTarget) : undefined;
  return {
    hash: bytesToHex(commit.hash),
    height: commit.height,
    round: commit.round,
    kind: commit.kind,
    parent: bytesToHex(commit.parent),
    modelHash: bytesToHex(commit.modelHash),
    stateHash: d !== null && d.stateHash.length > 0 ? bytesToHex(d.stateHash) : null,
    aggregateDigest: bytesToHex(commit.aggregateDigest),
    contributors: commit.kind === 'round' ? contributorsJson(d) : [],
    voters: [...(d?.voters ?? [])],
    missing: [...(d?.missing ?? [])],
    sequence: d === null ? null : c.sequence,
    unixMs: d === null ? null : c.unixMs,
    rollbackTarget: commit.kind === 'rollback' && d !== null ? bytesToHex(d.rollbackTarget) : null,
    rollbackTargetHeight: target?.commit.height ?? null,
  };
}

/** The {@link AbortJson} of an ABORTed round. */
export function abortJson(r: TimelineRound): AbortJson {
  const d = r.decision;
  return {
    kind: 'abort',
    round: r.round,
    reason: d.reason,
    parent: bytesToHex(d.parent),
    height: d.height,
    voters: [...d.voters],
    missing: [...d.missing],
    sequence: r.sequence,
    unixMs: r.unixMs,
    rollbackTarget: d.rollbackTarget.length > 0 ? bytesToHex(d.rollbackTarget) : null,
  };
}

/** The {@link ShowJson} of `c`. */
export function showJson(timeline: FederationTimeline, c: ChainCommit): ShowJson {
  const d = c.decision;
  const a = c.commit.kind === 'round' ? (d?.aggregate ?? null) : null;
  return {
    ...commitJson(timeline, c),
    params: commitRoundParams(c.commit),
    paramsHex: bytesToHex(c.commit.params),
    statistics: c.commit.kind === 'statistics' ? statisticsJson(c.commit.params) : null,
    aggregate:
      a === null
        ? null
        : {
            object: a.object,
            objectBytes: a.objectBytes,
            totalWeight: a.totalWeight,
            participants: a.participants,
            totalExamples: a.totalExamples,
          },
    exclusions: (d?.exclusions ?? []).map((e) => ({ ...e })),
    nextClip: d === null ? null : d.nextClip,
    evaluation:
      d?.evaluation == null
        ? null
        : {
            model: bytesToHex(d.evaluation.model),
            examples: d.evaluation.examples,
            correct: d.evaluation.correct,
            lossSum: d.evaluation.lossSum,
            classes: d.evaluation.classes,
            confusion: [...d.evaluation.confusion],
          },
    snapshots: timeline.snapshotsOf(c.commit.hash).map(({ entry, snapshot: s }) => ({
      sequence: entry.sequence,
      unixMs: entry.record.unixMs,
      object: s.object,
      digest: bytesToHex(s.digest),
      bytes: s.bytes,
      site: s.site,
    })),
  };
}

/** The statistics a statistics commit's params bind, or null when they do not decode. */
function statisticsJson(params: Uint8Array): ShowJson['statistics'] {
  try {
    const totals = decodeStatisticsParams(params);
    const { mean, std } = standardizerFromTotals(totals);
    return { rows: Number(totals.rows), mean: Array.from(mean), std: Array.from(std) };
  } catch {
    return null;
  }
}
