import type { FederationTimeline, TimelineRound } from '../../history/index.ts';
import type { DecisionBody } from '../../protocol/index.ts';
import type { RoundParams } from '../../services/coordinator/index.ts';
import type { ChainCommit } from '../../services/federation-log/index.ts';
import { bytesToHex, type CommitKind } from '../../versions/index.ts';

/** Hex digits of a hash in line output (as `cohort coordinator` prints them). */
export const SHORT_HASH = 12;

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

/** Lowercase hex of `bytes`. */
export const hex = (bytes: Uint8Array): string => bytesToHex(bytes);

/** The first {@link SHORT_HASH} hex digits of `bytes`. */
export const short = (bytes: Uint8Array): string => bytesToHex(bytes).slice(0, SHORT_HASH);

/** ISO 8601 of a log time; `-` for none. */
export function isoDate(unixMs: number | null): string {
  return unixMs === null || !Number.isFinite(unixMs) ? '-' : new Date(unixMs).toISOString();
}

/** Member-supplied text made safe for a terminal: control characters become `?`. */
export function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/** Rows as lines: every column but the last padded to its widest cell, two spaces apart. */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** The contributors a decision's aggregate names. */
export function contributorsJson(decision: DecisionBody | null): ContributorJson[] {
  return (decision?.aggregate?.contributors ?? []).map((c) => ({
    site: c.site,
    digest: hex(c.digest),
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
    hash: hex(commit.hash),
    height: commit.height,
    round: commit.round,
    kind: commit.kind,
    parent: hex(commit.parent),
    modelHash: hex(commit.modelHash),
    stateHash: d !== null && d.stateHash.length > 0 ? hex(d.stateHash) : null,
    aggregateDigest: hex(commit.aggregateDigest),
    contributors: commit.kind === 'round' ? contributorsJson(d) : [],
    voters: [...(d?.voters ?? [])],
    missing: [...(d?.missing ?? [])],
    sequence: d === null ? null : c.sequence,
    unixMs: d === null ? null : c.unixMs,
    rollbackTarget: commit.kind === 'rollback' && d !== null ? hex(d.rollbackTarget) : null,
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
    parent: hex(d.parent),
    height: d.height,
    voters: [...d.voters],
    missing: [...d.missing],
    sequence: r.sequence,
    unixMs: r.unixMs,
    rollbackTarget: d.rollbackTarget.length > 0 ? hex(d.rollbackTarget) : null,
  };
}

/** `@3 3f2a9c1e0b7d`: a commit's height and short hash. */
export function commitLabel(c: ChainCommit): string {
  return `@${c.commit.height} ${short(c.commit.hash)}`;
}

/** `n contributor(s)`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `bits 8, clip 0.5, strategy fedavg, learning rate 0.1` (the clip as the float32 it is). */
export function describeRoundParams(p: RoundParams): string {
  return `bits ${p.bits}, clip ${float32String(p.clip)}, strategy ${printable(p.strategy)}, learning rate ${p.learningRate}`;
}

/**
 * The shortest decimal that reads back as the same float32 (`0.05`, not `0.05000000074505806`):
 * clips are stored as float32. JSON output keeps the exact value.
 */
export function float32String(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const f = Math.fround(x);
  for (let digits = 1; digits <= 9; digits++) {
    const d = Number(f.toPrecision(digits));
    if (Math.fround(d) === f) return String(d);
  }
  return String(f);
}
