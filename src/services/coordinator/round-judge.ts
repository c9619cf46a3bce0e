import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { ControlBodies, EvaluationBody } from '../../protocol/index.ts';
import { bytesToHex } from '../../versions/index.ts';

/** What a round's votes decide. */
export interface Verdict {
  readonly commit: boolean;
  /** Why it aborts ('' on COMMIT). */
  readonly reason: string;
  /** Voters that voted YES / NO / not at all, sorted. */
  readonly yes: readonly string[];
  readonly no: readonly string[];
  readonly missing: readonly string[];
  /**
   * Voters that abstained (a vote neither YES nor NO: they could not read what they need now),
   * sorted. They count among the voters a YES majority is taken of, but abort nothing and are
   * not struck.
   */
  readonly abstained: readonly string[];
  /** On COMMIT: the agreed commit hash, H(w′) and strategy-state hash. */
  readonly commitHash: Uint8Array;
  readonly modelHash: Uint8Array;
  readonly stateHash: Uint8Array;
  /** On COMMIT: the evaluation totals every YES named (null when the round carried none). */
  readonly evaluation: EvaluationBody | null;
  /** On COMMIT: the params the YES votes named (statistics rounds; empty otherwise). */
  readonly params: Uint8Array;
  /**
   * Every voter voted NO for a fault of the aggregate itself that each decrypting site finds alike
   * ({@link AGGREGATE_FAULT_CODES}: its MAC does not hold): the voters are not at fault, the
   * aggregate's makers are (the coordinator investigates which). False when anyone voted YES.
   */
  readonly aggregateFault: boolean;
  /**
   * YES voters whose vote names another candidate (commit, H(w′), strategy state or evaluation
   * totals) than a strict majority of the YES voters: every honest site computes the same
   * candidate, so the minority is at fault, and is struck like a NO voter. Empty otherwise.
   */
  readonly deviants: readonly string[];
}

/**
 * Codes a NO vote's reason starts with when the aggregate itself is wrong in a way every site
 * that decrypts it finds alike (deterministic: the same ciphertexts, key and round). A NO with
 * one of these while another voter votes YES on the same aggregate is the voter's own fault.
 */
export const AGGREGATE_FAULT_CODES: readonly string[] = Object.freeze(['BLOCK_MAC_MISMATCH']);

/** Whether a vote's reason names an {@link AGGREGATE_FAULT_CODES} fault. */
export function isAggregateFault(reason: string | undefined): boolean {
  return AGGREGATE_FAULT_CODES.some((code) => reason?.startsWith(`${code}:`) === true);
}

const EMPTY = new Uint8Array(0);

/**
 * Members named, and characters of a voter's reason quoted, in an ABORT's reason. The decision is
 * a log entry: with a thousand NO voters (each reason up to a vote's size) listing all would make
 * it too large to append, and the logged votes hold every voter's reason anyway.
 */
const NAMED = 5;
const REASON_CHARS = 200;

function listed(members: readonly string[]): string {
  if (members.length <= 2 * NAMED) return members.join(', ');
  return `${members.slice(0, NAMED).join(', ')} and ${members.length - NAMED} more`;
}

function quoted(reason: string | undefined): string {
  if (!reason) return 'no reason';
  return reason.length <= REASON_CHARS ? reason : `${reason.slice(0, REASON_CHARS)}…`;
}

/** `NO from a (why), b (why)`; past {@link NAMED} voters, grouped by reason, the largest first. */
function noReason(no: readonly string[], votes: ReadonlyMap<string, ControlBodies['vote']>): string {
  if (no.length <= NAMED)
    return `NO from ${no.map((v) => `${v} (${quoted(votes.get(v)?.reason)})`).join(', ')}`;
  const byReason = new Map<string, string[]>();
  for (const v of no) {
    const why = quoted(votes.get(v)?.reason);
    byReason.set(why, [...(byReason.get(why) ?? []), v]);
  }
  const groups = [...byReason].sort((a, b) => b[1].length - a[1].length);
  const shown = groups.slice(0, 3).map(([why, sites]) => `${sites.length} × ${why} (${listed(sites)})`);
  const rest = groups.length > 3 ? `; ${groups.length - 3} other reasons` : '';
  return `NO from ${no.length} voters: ${shown.join('; ')}${rest}`;
}

/**
 * Judges a round's votes (pure). COMMIT only when no voter voted NO, more than half of the
 * voters voted YES (voters that stayed silent are left out of the round's view and catch up by
 * replay), and every YES names the same commit hash, H(w′) and strategy-state hash, that commit
 * hash being the one the coordinator expects for that H(w′) (`expectedCommit`, which binds the
 * parent, height, round, aggregate and parameters), and the same evaluation totals (they come from
 * the same decrypted aggregate). Anything else aborts, with the reason.
 */
export function judgeVotes(input: {
  readonly voters: readonly string[];
  readonly votes: ReadonlyMap<string, ControlBodies['vote']>;
  /**
   * The commit hash the coordinator computes for a model hash (and, in a statistics round, the
   * params the voters computed); throws on an unusable one.
   */
  readonly expectedCommit: (modelHash: Uint8Array, params: Uint8Array) => Uint8Array;
  /** For the reason text. */
  readonly voteTimeoutMs: number;
}): Verdict {
  const voters = [...input.voters].sort();
  const yes = voters.filter((v) => input.votes.get(v)?.yes === true);
  const abstains = (v: string) => input.votes.get(v)?.yes === false && input.votes.get(v)?.abstain === true;
  const abstained = voters.filter(abstains);
  const no = voters.filter((v) => input.votes.get(v)?.yes === false && !abstains(v));
  const missing = voters.filter((v) => !input.votes.has(v));
  const abort = (reason: string): Verdict => ({
    commit: false,
    reason,
    yes,
    no,
    missing,
    abstained,
    commitHash: EMPTY,
    modelHash: EMPTY,
    stateHash: EMPTY,
    evaluation: null,
    params: EMPTY,
    aggregateFault: false,
    deviants: [],
  });
  /** The YES voters outside the strict majority of `keyOf` (all of them when there is none). */
  const minority = (voting: readonly string[], keyOf: (v: ControlBodies['vote']) => string): string[] => {
    const groups = new Map<string, string[]>();
    for (const v of voting) {
      const k = keyOf(input.votes.get(v)!);
      groups.set(k, [...(groups.get(k) ?? []), v]);
    }
    const largest = [...groups.values()].sort((a, b) => b.length - a.length)[0] ?? [];
    return largest.length * 2 > voting.length ? voting.filter((v) => !largest.includes(v)) : [];
  };
  const candidate = (v: ControlBodies['vote']) =>
    `${bytesToHex(v.commitHash)}/${bytesToHex(v.modelHash)}/${bytesToHex(v.stateHash)}`;
  if (voters.length === 0) return abort('no live site to vote');
  if (no.length > 0) {
    const fault = yes.length === 0 && no.every((v) => isAggregateFault(input.votes.get(v)?.reason));
    return { ...abort(noReason(no, input.votes)), aggregateFault: fault };
  }
  if (yes.length * 2 <= voters.length) {
    return abort(
      `${yes.length} of ${voters.length} voters voted YES within ${input.voteTimeoutMs} ms (` +
        [
          missing.length > 0 ? `no vote from ${listed(missing)}` : '',
          abstained.length > 0 ? `abstained: ${listed(abstained)}` : '',
        ]
          .filter((x) => x.length > 0)
          .join('; ') +
        ')',
    );
  }
  const first = input.votes.get(yes[0]!)!;
  for (const v of yes) {
    const vote = input.votes.get(v)!;
    const why = !bytesEqual(vote.commitHash, first.commitHash)
      ? 'votes name different commit hashes'
      : !bytesEqual(vote.modelHash, first.modelHash)
        ? 'votes name different model hashes'
        : !bytesEqual(vote.stateHash, first.stateHash)
          ? 'votes name different strategy states'
          : undefined;
    if (why !== undefined) {
      const deviants = minority(yes, candidate);
      return {
        ...abort(deviants.length > 0 ? `${why} (${listed(deviants)} against the majority)` : why),
        deviants,
      };
    }
  }
  // A voter that prepared before a restart re-sends its YES without the totals (it kept only the
  // candidate): the others' totals stand, but every totals named must agree.
  const naming = yes.filter((v) => (input.votes.get(v)!.evaluation ?? null) !== null);
  const named = naming.map((v) => input.votes.get(v)!.evaluation!);
  if (named.some((e) => !sameEvaluation(e, named[0]!))) {
    const deviants = minority(naming, (v) => evaluationKey(v.evaluation!));
    return {
      ...abort(
        `votes name different evaluation totals${deviants.length > 0 ? ` (${listed(deviants)} against the majority)` : ''}`,
      ),
      deviants,
    };
  }
  if (first.stateHash.length !== 32) return abort('votes name no strategy-state hash');
  let expected: Uint8Array;
  try {
    expected = input.expectedCommit(first.modelHash, first.params ?? EMPTY);
  } catch (err) {
    return abort(`votes carry an unusable model hash: ${(err as Error).message}`);
  }
  if (!bytesEqual(expected, first.commitHash)) {
    return abort(
      `voted commit hash ${bytesToHex(first.commitHash).slice(0, 12)} is not the commit of (head, round, aggregate, model, params), ${bytesToHex(expected).slice(0, 12)}`,
    );
  }
  return {
    commit: true,
    reason: '',
    yes,
    no,
    missing,
    abstained,
    commitHash: first.commitHash,
    modelHash: first.modelHash,
    stateHash: first.stateHash,
    evaluation: named[0] ?? null,
    params: first.params ?? EMPTY,
    aggregateFault: false,
    deviants: [],
  };
}

/** The fields {@link sameEvaluation} compares, as one string. */
function evaluationKey(e: EvaluationBody): string {
  return JSON.stringify([bytesToHex(e.model), e.examples, e.correct, e.lossSum, e.classes, e.confusion]);
}

function sameEvaluation(a: EvaluationBody | null, b: EvaluationBody | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    bytesEqual(a.model, b.model) &&
    a.examples === b.examples &&
    a.correct === b.correct &&
    a.lossSum === b.lossSum &&
    a.classes === b.classes &&
    a.confusion.length === b.confusion.length &&
    a.confusion.every((v, i) => v === b.confusion[i])
  );
}
