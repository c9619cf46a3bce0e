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
