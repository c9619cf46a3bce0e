import { bytesEqual } from '../../crypto/digest/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { DecisionBody } from '../protocol/index.ts';
import type { RoundParams } from '../round/index.ts';
import type { ChainCommit } from '../services/federation-log/index.ts';
import { commitRoundParams } from './commit-params.ts';
import type { FederationTimeline } from './federation-timeline.ts';

/** One round decided between two commits. */
export interface DiffRound {
  readonly round: number;
  /** Log sequence of the decision. */
  readonly sequence: number;
  readonly unixMs: number;
  readonly outcome: 'commit' | 'abort';
  /** The commit it made (null for an ABORT). */
  readonly commit: ChainCommit | null;
  /** The commit a rollback round (committed or aborted) restores, when it is on the chain. */
  readonly rollbackTarget: ChainCommit | null;
  readonly decision: DecisionBody;
}

/** The round parameters compared between consecutive commits (`round` always changes and is left out). */
export const DIFFED_PARAMS = ['bits', 'clip', 'strategy', 'learningRate'] as const;

export type DiffedParam = (typeof DIFFED_PARAMS)[number];

/** A round parameter that changed from one commit to the next. */
export interface ParamChange {
  readonly param: DiffedParam;
  readonly before: number | string;
  readonly after: number | string;
  /** The commit that carries the new value. */
  readonly at: ChainCommit;
}

/** A rollback committed between the two commits. */
export interface DiffRollback {
  readonly commit: ChainCommit;
  readonly target: ChainCommit;
}

/** What changed on the chain between two of its commits (see {@link diffCommits}). */
export interface CommitDiff {
  /** The lower of the two commits. */
  readonly from: ChainCommit;
  /** The higher of the two commits. */
  readonly to: ChainCommit;
  /** True when the first commit given was the higher one. */
  readonly reversed: boolean;
  /** Rounds decided after `from` up to the decision of `to`, ABORTs included, in log order. */
  readonly rounds: readonly DiffRound[];
  /** `from`'s and `to`'s decoded round parameters (null when they do not decode). */
  readonly paramsFrom: RoundParams | null;
  readonly paramsTo: RoundParams | null;
  /** Each change of a {@link DIFFED_PARAMS} value from one commit to the next, in chain order. */
  readonly paramChanges: readonly ParamChange[];
  /** Rollbacks committed between them, in chain order. */
  readonly rollbacks: readonly DiffRollback[];
}

/**
 * What changed between commits `a` and `b` of `timeline`'s chain, in either order (the lower one
 * is `from`): the rounds decided in between (committed and aborted) with their decisions
 * (contributors, voters, missing, reasons), the changes of the round parameters from each commit
 * to the next, and the rollbacks. The chain is linear, so every round in between is on it.
 *
 * @throws InvalidArgumentError naming `a` or `b` when it is not a commit of the chain.
 */
export function diffCommits(timeline: FederationTimeline, a: ChainCommit, b: ChainCommit): CommitDiff {
  const history = timeline.history;
  for (const [name, c] of [
    ['a', a],
    ['b', b],
  ] as const) {
    const on = c?.commit ? history.commitAt(c.commit.height) : undefined;
    if (on === undefined || !bytesEqual(on.commit.hash, c.commit.hash)) {
      throw new InvalidArgumentError(`${name} must be a commit on the chain`, { details: { name } });
    }
  }
  const reversed = a.commit.height > b.commit.height;
  const from = reversed ? b : a;
  const to = reversed ? a : b;
  const rounds: DiffRound[] = timeline.roundsBetween(from.sequence, to.sequence).map((r) => {
    const d = r.decision;
    const commit = d.commit ? (history.commitAt(d.height) ?? null) : null;
    const rollbackTarget =
      d.rollbackTarget.length > 0 ? (history.commitByHash(d.rollbackTarget) ?? null) : null;
    return {
      round: r.round,
      sequence: r.sequence,
      unixMs: r.unixMs,
      outcome: d.commit ? 'commit' : 'abort',
      commit,
      rollbackTarget,
      decision: d,
    };
  });
  const paramChanges: ParamChange[] = [];
  const rollbacks: DiffRollback[] = [];
  let previous = commitRoundParams(from.commit);
  for (let h = from.commit.height + 1; h <= to.commit.height; h++) {
    const at = history.commitAt(h)!;
    const params = commitRoundParams(at.commit);
    if (previous !== null && params !== null) {
      for (const param of DIFFED_PARAMS) {
        if (previous[param] !== params[param]) {
          paramChanges.push({ param, before: previous[param], after: params[param], at });
        }
      }
    }
    if (at.commit.kind === 'rollback' && at.decision !== null) {
      const target = history.commitByHash(at.decision.rollbackTarget);
      if (target !== undefined) rollbacks.push({ commit: at, target });
    }
    previous = params;
  }
  return {
    from,
    to,
    reversed,
    rounds,
    paramsFrom: commitRoundParams(from.commit),
    paramsTo: commitRoundParams(to.commit),
    paramChanges,
    rollbacks,
  };
}
