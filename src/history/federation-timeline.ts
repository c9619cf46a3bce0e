import {
  type ChainCommit,
  type DecidedRound,
  type LogEntry,
  type LoggedAdminAction,
  type LoggedSnapshot,
  LogHistory,
  type LogPosition,
} from '../services/federation-log/index.ts';
import { bytesToHex, type Commit } from '../versions/index.ts';

/** One decided round as the log holds it: its RoundOpen and its decision (COMMIT or ABORT). */
export type TimelineRound = DecidedRound;

/**
 * The federation's verified history ({@link LogHistory}: the chain, the decided rounds with
 * their RoundOpens, ABORTs included, the snapshots, the rules) and the queries `cohort versions`
 * asks of it. Fold entries in
 * log order with {@link FederationTimeline.apply} (after checking their links, as
 * `FederationLogReader.entries` does); an entry that breaks the history's rules throws
 * `LOG_HISTORY_INVALID` and is not recorded.
 */
export class FederationTimeline {
  readonly history: LogHistory;

  /** @param genesis the federation's genesis commit (`federationGenesis(config).commit`). */
  constructor(genesis: Commit, stream = 'log') {
    // Versions, rounds and diffs read decisions, never the partial and vote records they checked.
    this.history = new LogHistory(genesis, stream, { keepEvidence: false });
  }

  /** The last entry applied (sequence 0 before any). */
  get position(): LogPosition {
    return this.history.position;
  }

  /** The head of the chain. */
  get head(): ChainCommit {
    return this.history.head;
  }

  /** Decided rounds, oldest first. */
  get rounds(): readonly TimelineRound[] {
    return this.history.decided;
  }

  /** Admin actions the log recorded (operators' requests through the admin API), oldest first. */
  get adminActions(): readonly LoggedAdminAction[] {
    return this.history.adminActions;
  }

  /** Checks `entry` against the history and folds it in. */
  apply(entry: LogEntry): void {
    this.history.apply(entry);
  }

  /** Commits on the chain, genesis first. */
  commits(): ChainCommit[] {
    const out: ChainCommit[] = [];
    for (let h = 0; h <= this.history.head.commit.height; h++) out.push(this.history.commitAt(h)!);
    return out;
  }

  /** Decided rounds whose decision lies in the log after sequence `after`, up to `upTo` (inclusive). */
  roundsBetween(after: number, upTo: number): TimelineRound[] {
    return this.history.decided.filter((r) => r.sequence > after && r.sequence <= upTo);
  }

  /** The snapshots the log recorded of the commit with `hash`, in log order. */
  snapshotsOf(hash: Uint8Array): LoggedSnapshot[] {
    const hex = bytesToHex(hash);
    return this.history.snapshots.filter((s) => bytesToHex(s.snapshot.commitHash) === hex);
  }
}
