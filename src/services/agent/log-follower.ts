import type { NatsConnection } from '@nats-io/transport-node';
import type { KeyLookup } from '../../protocol/index.ts';
import type { Commit } from '../../versions/index.ts';
import {
  checkLink,
  type FederationLogReader,
  type LogEntry,
  LogHistory,
  openLogReader,
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
 * A site's read-only view of the federation log (DESIGN §6: "sites read the log … for catch-up"):
 * the verified history ({@link LogHistory}) kept current by reading new entries, or by taking a
 * broadcast decision that directly follows the last entry read. Reads are serialized.
 */
export class LogFollower {
  readonly history: LogHistory;
  readonly #reader: FederationLogReader;
  #syncing: Promise<number> | undefined;

  private constructor(reader: FederationLogReader, genesis: Commit) {
    this.#reader = reader;
    this.history = new LogHistory(genesis, reader.stream, { keepEvidence: false });
  }

  /** Opens the log of `federation` on `nc` for reading (stream info and get-message only). */
  static async open(
    nc: NatsConnection,
    opts: { federation: string; coordinator: string; keys: KeyLookup; genesis: Commit },
  ): Promise<LogFollower> {
    const reader = await openLogReader(nc, {
      federation: opts.federation,
      coordinator: opts.coordinator,
      keys: opts.keys,
      window: FOLLOWER_WINDOW,
      signatures: 'chain',
    });
    return new LogFollower(reader, opts.genesis);
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

  async #sync(): Promise<number> {
    let n = 0;
    for await (const entry of this.#reader.entries(this.history.position)) {
      this.history.apply(entry);
      n++;
    }
    return n;
  }
}
