import {
  type CommitDiff,
  type ContributorJson,
  contributorsJson,
  type LayerDiffStats,
} from '../../history/index.ts';
import type { RoundParams } from '../../round/index.ts';
import type { ChainCommit } from '../../services/federation-log/index.ts';
import type { CommitKind } from '../../versions/index.ts';
import {
  alignColumns,
  commitLabel,
  describeRoundParams,
  float32String,
  hex,
  isoDate,
  plural,
  printable,
  short,
} from './versions-format.ts';

/** A commit as `versions diff --json` names it. */
export interface DiffCommitJson {
  hash: string;
  height: number;
  round: number;
  kind: CommitKind;
}

/** A round decided between the two commits. */
export interface DiffRoundJson {
  round: number;
  outcome: 'commit' | 'abort';
  /** COMMIT: the commit's kind; ABORT: null. */
  kind: Exclude<CommitKind, 'genesis'> | null;
  /** COMMIT: the new commit's hash; ABORT: null. */
  hash: string | null;
  /** COMMIT: the new height; ABORT: the head's height, unchanged. */
  height: number;
  sequence: number;
  unixMs: number;
  /** ABORT: why (empty for a COMMIT). */
  reason: string;
  contributors: ContributorJson[];
  voters: string[];
  missing: string[];
  /** Rollback rounds (committed or aborted): the commit restored. */
  rollbackTarget: string | null;
  rollbackTargetHeight: number | null;
}

/** `versions diff --json`. */
export interface DiffJson {
  /** The lower commit, and the higher. */
  from: DiffCommitJson;
  to: DiffCommitJson;
  /** True when the first ref named the higher commit. */
  reversed: boolean;
  rounds: DiffRoundJson[];
  params: { from: RoundParams | null; to: RoundParams | null };
  paramChanges: {
    param: 'bits' | 'clip' | 'strategy' | 'learningRate';
    before: number | string;
    after: number | string;
    /** The commit carrying the new value. */
    hash: string;
    height: number;
    round: number;
  }[];
  rollbacks: { hash: string; height: number; round: number; target: string; targetHeight: number }[];
  /** The model store the layer statistics were read from (null: none used). */
  store: string | null;
  /** Per-layer statistics (null when the store does not hold both models or none was used). */
  layers: LayerDiffStats[] | null;
}

const commitRef = (c: ChainCommit): DiffCommitJson => ({
  hash: hex(c.commit.hash),
  height: c.commit.height,
  round: c.commit.round,
  kind: c.commit.kind,
});

/** The {@link DiffJson} of `diff` (`layers` and `store` as computed by the command). */
export function diffJson(diff: CommitDiff, store: string | null, layers: LayerDiffStats[] | null): DiffJson {
  return {
    from: commitRef(diff.from),
    to: commitRef(diff.to),
    reversed: diff.reversed,
    rounds: diff.rounds.map((r) => {
      const d = r.decision;
      return {
        round: r.round,
        outcome: r.outcome,
        kind: r.commit === null ? null : (r.commit.commit.kind as Exclude<CommitKind, 'genesis'>),
        hash: r.commit === null ? null : hex(r.commit.commit.hash),
        height: d.height,
        sequence: r.sequence,
        unixMs: r.unixMs,
        reason: d.reason,
        contributors: contributorsJson(d),
        voters: [...d.voters],
        missing: [...d.missing],
        rollbackTarget: d.rollbackTarget.length > 0 ? hex(d.rollbackTarget) : null,
        rollbackTargetHeight: r.rollbackTarget?.commit.height ?? null,
      };
    }),
    params: { from: diff.paramsFrom, to: diff.paramsTo },
    paramChanges: diff.paramChanges.map((p) => ({
      param: p.param,
      before: p.before,
      after: p.after,
      hash: hex(p.at.commit.hash),
      height: p.at.commit.height,
      round: p.at.commit.round,
    })),
    rollbacks: diff.rollbacks.map((r) => ({
      hash: hex(r.commit.commit.hash),
      height: r.commit.commit.height,
      round: r.commit.commit.round,
      target: hex(r.target.commit.hash),
      targetHeight: r.target.commit.height,
    })),
    store,
    layers,
  };
}

/** Six significant digits. */
const num = (x: number): string => String(Number(x.toPrecision(6)));

const PARAM_LABELS = { bits: 'bits', clip: 'clip', strategy: 'strategy', learningRate: 'learning rate' };

/** `versions diff` lines. */
export function diffLines(diff: CommitDiff, layers: LayerDiffStats[] | null, store: string | null): string[] {
  const out: string[] = [];
  const f = diff.from.commit;
  const t = diff.to.commit;
  out.push(
    `diff ${commitLabel(diff.from)} (round ${f.round}) → ${commitLabel(diff.to)} (round ${t.round})${diff.reversed ? ' (reversed: the first ref is the later commit)' : ''}`,
  );
  const committed = diff.rounds.filter((r) => r.outcome === 'commit').length;
  out.push(
    `rounds: ${diff.rounds.length} (${committed} committed, ${diff.rounds.length - committed} aborted)`,
  );
  const rows = diff.rounds.map((r) => {
    const d = r.decision;
    const sites = (d.aggregate?.contributors ?? []).map((c) => printable(c.site));
    const target = r.rollbackTarget === null ? short(d.rollbackTarget) : `@${r.rollbackTarget.commit.height}`;
    if (r.commit === null) {
      const what = d.rollbackTarget.length > 0 ? `rollback to ${target}: ` : '';
      return [
        '',
        `round ${r.round}`,
        'ABORT',
        '-',
        isoDate(r.unixMs),
        `${what}${printable(d.reason) || '(no reason)'}`,
      ];
    }
    const detail =
      r.commit.commit.kind === 'rollback'
        ? `rollback to ${target}`
        : `${plural(sites.length, 'contributor')}${sites.length > 0 ? `: ${sites.join(', ')}` : ''}`;
    return ['', `round ${r.round}`, 'COMMIT', commitLabel(r.commit), isoDate(r.unixMs), detail];
  });
  out.push(...alignColumns(rows));
  if (diff.paramChanges.length === 0) {
    out.push(`params: unchanged${diff.paramsTo === null ? '' : ` (${describeRoundParams(diff.paramsTo)})`}`);
  } else {
    out.push(`params: ${plural(diff.paramChanges.length, 'change')}`);
    for (const p of diff.paramChanges) {
      const value = (v: number | string) => (p.param === 'clip' ? float32String(v as number) : String(v));
      out.push(
        `  ${PARAM_LABELS[p.param]} ${value(p.before)} → ${value(p.after)} at ${commitLabel(p.at)} (round ${p.at.commit.round})`,
      );
    }
  }
  out.push(`rollbacks: ${diff.rollbacks.length}`);
  for (const r of diff.rollbacks) {
    out.push(`  ${commitLabel(r.commit)} (round ${r.commit.commit.round}) restores ${commitLabel(r.target)}`);
  }
  if (layers !== null) {
    out.push(`layers (store ${store}):`);
    const rowsL: string[][] = [['', 'tensor', 'shape', '‖Δ‖', 'max|Δ|', '‖from‖', '‖to‖']];
    for (const l of layers) {
      for (const [s, shape] of [
        [l.weight, l.weightShape.join('×')],
        [l.bias, `${l.outputs}`],
      ] as const) {
        rowsL.push(['', s.name, shape, num(s.l2Diff), num(s.maxAbsDiff), num(s.l2From), num(s.l2To)]);
      }
    }
    out.push(...alignColumns(rowsL));
  }
  return out;
}
