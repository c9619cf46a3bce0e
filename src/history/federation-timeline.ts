import type { ControlBodies, DecisionBody } from '../protocol/index.ts';
import {
  type ChainCommit,
  type LogEntry,
  type LoggedSnapshot,
  LogHistory,
  type LogPosition,
  recordKind,
} from '../services/federation-log/index.ts';
import { bytesToHex, type Commit } from '../versions/index.ts';

/** One decided round as the log holds it: its RoundOpen and its decision (COMMIT or ABORT). */
export interface TimelineRound {
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
}

/**
 * The federation's verified history ({@link LogHistory}: the chain, the snapshots, the rules)
 * plus every decided round in log order, ABORTs included, with its RoundOpen. Fold entries in
 * log order with {@link FederationTimeline.apply} (after checking their links, as
 * `FederationLogReader.entries` does); an entry that breaks the history's rules throws
 * `LOG_HISTORY_INVALID` and is not recorded.
 */
export class FederationTimeline {
  readonly history: LogHistory;
  readonly #rounds: TimelineRound[] = [];

  /** @param genesis the federation's genesis commit (`federationGenesis(config).commit`). */
  constructor(genesis: Commit, stream = 'log') {
    this.history = new LogHistory(genesis, stream);
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
    return this.#rounds;
  }

  /** Checks `entry` against the history and folds it in. */
  apply(entry: LogEntry): void {
    const open = this.history.openRound;
    this.history.apply(entry);
    if (recordKind(entry.record) !== 'decision' || open === null) return;
    const decision = entry.record.decision!;
    this.#rounds.push({
      round: decision.round,
      sequence: entry.sequence,
      unixMs: entry.record.unixMs,
      decision,
      open: open.roundOpen,
      openSequence: open.entry.sequence,
    });
  }

  /** Commits on the chain, genesis first. */
  commits(): ChainCommit[] {
    const out: ChainCommit[] = [];
    for (let h = 0; h <= this.history.head.commit.height; h++) out.push(this.history.commitAt(h)!);
    return out;
  }

  /** Decided rounds whose decision lies in the log after sequence `after`, up to `upTo` (inclusive). */
  roundsBetween(after: number, upTo: number): TimelineRound[] {
    return this.#rounds.filter((r) => r.sequence > after && r.sequence <= upTo);
  }

  /** The snapshots the log recorded of the commit with `hash`, in log order. */
  snapshotsOf(hash: Uint8Array): LoggedSnapshot[] {
    const hex = bytesToHex(hash);
    return this.history.snapshots.filter((s) => bytesToHex(s.snapshot.commitHash) === hex);
  }
}
