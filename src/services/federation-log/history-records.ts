// What a LogHistory exposes of the log it folded (chain commits, decided and open rounds, the
// records it keeps) and its options: the shapes its readers (agents, coordinator, admin API,
// auditor) depend on, apart from the rules that build them.
import type {
  AdminActionBody,
  ControlBodies,
  DecisionBody,
  SnapshotRecordBody,
} from '../../protocol/index.ts';
import type { RegistryChangeBody, VerifiedRegistry } from '../../registry/index.ts';
import type { Commit } from '../../versions/index.ts';
import type { LogEntry } from './log-entry.ts';
import type { LoggedPartial, LoggedVote, RoundEvidence } from './round-evidence.ts';

/** A commit on the log's chain, with where the log recorded it (genesis: sequence 0). */
export interface ChainCommit {
  readonly commit: Commit;
  /** Log sequence of the decision that committed it (0 for genesis). */
  readonly sequence: number;
  /** The coordinator's clock when it was appended (0 for genesis). */
  readonly unixMs: number;
  /**
   * The decision that committed it: null for genesis, and for a commit older than the history
   * retains in full ({@link LogHistoryOptions.retainRounds}): the decision is then the log's entry
   * at `sequence`.
   */
  readonly decision: DecisionBody | null;
  /** Log sequence of its round's RoundOpen (0 for genesis). */
  readonly openSequence: number;
}

/** A decided round (COMMIT or ABORT): its RoundOpen, its decision, and where the log holds them. */
export interface DecidedRound {
  readonly round: number;
  /** Log sequence of the decision. */
  readonly sequence: number;
  /** The coordinator's clock when the decision was appended. */
  readonly unixMs: number;
  readonly decision: DecisionBody;
  /** The round's RoundOpen (bits, clip, assignments, deadline). */
  readonly open: ControlBodies['round-open'];
  /** Log sequence of the RoundOpen. */
  readonly openSequence: number;
  /** The partial records logged for the round (accepted partials, before PREPARE), in log order; empty without `keepEvidence`. */
  readonly partials: readonly LoggedPartial[];
  /** The votes logged for the round (before its decision, one a record or batched), in log order; empty without `keepEvidence`. */
  readonly votes: readonly LoggedVote[];
}

/** A round opened in the log and not decided yet. */
export interface OpenRound {
  readonly entry: LogEntry;
  readonly roundOpen: ControlBodies['round-open'];
  /** The partial and vote records logged for it so far. */
  readonly evidence: RoundEvidence;
}

/** A snapshot the log recorded. */
export interface LoggedSnapshot {
  readonly entry: LogEntry;
  readonly snapshot: SnapshotRecordBody;
}

/** A registry change the log recorded. */
export interface LoggedRegistryChange {
  readonly entry: LogEntry;
  /** The change (its officer signature checked when the history has the registry). */
  readonly change: RegistryChangeBody;
}

/** An admin action the log recorded (an operator's request through the admin API, logged before it acted). */
export interface LoggedAdminAction {
  readonly entry: LogEntry;
  readonly action: AdminActionBody;
}

/**
 * The admin action naming a rollback request the coordinator accepted (through the admin API or a
 * signed `rollback-request`): its `target` is the commit hash in hex, its arguments' `reason` the
 * operator's. Logged before the request is queued, so a coordinator restarted on the log finds it.
 */
export const ADMIN_ACTION_ROLLBACK = 'versions.rollback';

/**
 * The admin action a coordinator appends as its first entry once it holds the lease and has read
 * the log: `caller` is the coordinator, `target` its lease instance. It claims the log's tail, so
 * an append a paused predecessor prepared before its lease lapsed finds the log moved on and is
 * refused (its writer fences itself), rather than landing and fencing the new coordinator.
 */
export const ADMIN_ACTION_COORDINATOR_START = 'coordinator.start';

/**
 * The string argument `name` of a logged admin action (its `arguments` are canonical JSON), or
 * undefined when it has none or the arguments are not JSON: a logged action is read, never refused.
 */
export function adminActionText(action: AdminActionBody, name: string): string | undefined {
  try {
    const value = (JSON.parse(new TextDecoder().decode(action.arguments)) as Record<string, unknown>)[name];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A rollback request the log holds and no rollback round has taken yet
 * ({@link LogHistory.pendingRollbacks}).
 */
export interface PendingRollback {
  /** The admin action entry that logged the request. */
  readonly entry: LogEntry;
  /** The commit to roll back to (32 bytes). */
  readonly target: Uint8Array;
  readonly reason: string;
}

/**
 * Decided rounds (and commits' decisions) a long-running member's history keeps in full
 * ({@link LogHistoryOptions.retainRounds}): a site's catch-up between snapshots
 * (`history.snapshotEvery`, default 10) and every lookup of a recent round stay in memory; an
 * older round is read from the log when needed.
 */
export const MEMBER_RETAIN_ROUNDS = 256;

/** Options of {@link LogHistory}. */
export interface LogHistoryOptions {
  /**
   * The federation's pinned registry: registry changes are then verified (the officer's signature,
   * the registry's rules) and folded into {@link LogHistory.registry}. Without it they are checked
   * for structure and round only (the coordinator's signature on the entry still holds).
   */
  readonly registry?: VerifiedRegistry;
  /**
   * Keep each decided round's partial and vote records in {@link DecidedRound} (default true). A
   * long-running member that only follows the log (an agent, the coordinator) passes false: the
   * records are still checked when the decision is applied, but a decided round then holds empty
   * `partials` and `votes`, so memory does not grow by every round's evidence (~100 KB a round).
   */
  readonly keepEvidence?: boolean;
  /**
   * How many of the most recent decided rounds, and of the most recent commits' decisions, are
   * kept in full (default: all). Older ones are compacted: {@link LogHistory.decisionOf} no longer
   * finds the round, {@link LogHistory.decided} starts after it, and its chain commit keeps the
   * commit, its sequences and its time with `decision` null. The chain itself (every commit,
   * owned hashes, ~1.5 KB each in V8) stays whole. A long-running member passes a window so that its
   * memory does not grow by every round's decision and RoundOpen (~5 KB at 4 sites, ~100 KB at
   * 1,000); a one-shot reader (the auditor, the CLI) keeps all.
   */
  readonly retainRounds?: number;
}
