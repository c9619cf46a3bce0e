import type { NatsConnection } from '@nats-io/transport-node';
import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { ControlBodies, DecisionBody, KeyLookup } from '../../protocol/index.ts';
import { bytesToHex, type Commit } from '../../versions/index.ts';
import {
  type ChainCommit,
  checkLink,
  FederationLogError,
  type FederationLogReader,
  type LogEntry,
  LogHistory,
  MEMBER_RETAIN_ROUNDS,
  openLogReader,
  type SharedLogReads,
} from '../federation-log/index.ts';

/**
 * Log entries a follower requests ahead of the one it folds in, and the longest run of entries
 * authenticated by one signature (`signatures: 'chain'`). A site reads the entries of a round on
 * the decision's critical path (COMMIT → switched) and a whole backlog when it catches up: one
 * round trip and one signature check per 128 entries instead of 7 round trips and 128 checks with
 * the reader's default of 16 and a check per entry. An entry is at most nats-server's `max_payload`
 * (1 MiB by default; `LOG_MAX_ENTRY_BYTES` in any case), which bounds what the window holds.
 */
export const FOLLOWER_WINDOW = 128;

/**
 * A site's read-only view of the federation log (sites read it for catch-up; docs/log-format.md):
 * the verified history ({@link LogHistory}) kept current by reading new entries, or by taking a
 * broadcast decision that directly follows the last entry read. Reads are serialized.
 */
export class LogFollower {
  readonly history: LogHistory;
  readonly #reader: FederationLogReader;
  #syncing: Promise<number> | undefined;

  private constructor(reader: FederationLogReader, genesis: Commit, retainRounds: number) {
    this.#reader = reader;
    this.history = new LogHistory(genesis, reader.stream, { keepEvidence: false, retainRounds });
  }

  /**
   * Opens the log of `federation` on `nc` for reading (stream info and get-message only).
   * `retainRounds`: rounds the history keeps in full (default {@link MEMBER_RETAIN_ROUNDS}).
   */
  static async open(
    nc: NatsConnection,
    opts: {
      federation: string;
      coordinator: string;
      keys: KeyLookup;
      genesis: Commit;
      retainRounds?: number;
      /** Entries shared with other followers in this process (a swarm's sites). */
      shared?: SharedLogReads;
    },
  ): Promise<LogFollower> {
    const reader = await openLogReader(nc, {
      federation: opts.federation,
      coordinator: opts.coordinator,
      keys: opts.keys,
      window: FOLLOWER_WINDOW,
      signatures: 'chain',
      ...(opts.shared === undefined ? {} : { shared: opts.shared }),
    });
    return new LogFollower(reader, opts.genesis, opts.retainRounds ?? MEMBER_RETAIN_ROUNDS);
  }

  /** Reads and folds in every entry after the last one read; returns how many. */
  sync(): Promise<number> {
    this.#syncing ??= this.#sync().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  /** Whether the log holds entries this follower has not read (one stream-info request). */
  async behind(): Promise<boolean> {
    return (await this.#reader.lastSequence()) > this.history.position.sequence;
  }

  /**
   * A verified entry that arrived by broadcast: folded in when it directly follows the last entry
   * read (no JetStream read); otherwise the log is read up to it. True once it is in the history.
   */
  async take(entry: LogEntry): Promise<boolean> {
    const position = this.history.position;
    if (entry.sequence <= position.sequence) return true;
    if (entry.sequence === position.sequence + 1 && this.#syncing === undefined) {
      checkLink(entry, position, this.#reader.stream);
      this.history.apply(entry);
      return true;
    }
    await this.sync();
    return this.history.position.sequence >= entry.sequence;
  }

  /**
   * The decision and RoundOpen of chain commit `cc` (not genesis): from the history while it
   * retains them, else read from the log at their sequences (signatures checked) and matched to
   * the commit. `LOG_HISTORY_INVALID` when those entries are not that commit's.
   */
  async roundOf(cc: ChainCommit): Promise<{ decision: DecisionBody; open: ControlBodies['round-open'] }> {
    const kept = this.history.decisionOf(cc.commit.round);
    if (cc.decision !== null && kept !== undefined) return { decision: cc.decision, open: kept.open };
    const [d, o] = await Promise.all([this.#reader.get(cc.sequence), this.#reader.get(cc.openSequence)]);
    const decision = d.record.decision;
    const open = o.record.roundOpen;
    if (
      decision == null ||
      open == null ||
      !bytesEqual(decision.commitHash, cc.commit.hash) ||
      open.round !== cc.commit.round
    ) {
      throw new FederationLogError(
        'LOG_HISTORY_INVALID',
        `log ${this.#reader.stream} entries ${cc.openSequence} and ${cc.sequence} are not the RoundOpen and decision of commit ${bytesToHex(cc.commit.hash).slice(0, 12)} (height ${cc.commit.height})`,
        { details: { stream: this.#reader.stream, sequence: cc.sequence } },
      );
    }
    return { decision, open };
  }

  async #sync(): Promise<number> {
    let n = 0;
    for await (const entry of this.#reader.entries(this.history.position)) {
      this.history.apply(entry);
      n++;
    }
    return n;
  }
}
