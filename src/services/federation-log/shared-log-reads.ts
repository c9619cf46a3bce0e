import { assertInteger } from '../../errors/index.ts';
import type { LogEntry } from './log-entry.ts';

/** Verified log entries a {@link SharedLogReads} remembers by default (oldest dropped first). */
export const SHARED_LOG_READS_SIZE = 8192;

/**
 * Verified log entries shared by the log readers given it (none share by default: a member alone
 * in its process reads and checks every entry itself). `cohort swarm` gives one to every site it
 * runs: its n sites follow the same log, so a round of n votes would otherwise make one process
 * fetch, decode and check n × n entries. With it each entry is fetched and checked once, and every
 * site still folds every entry into its own history (links, evidence, decisions). A log entry never
 * changes once appended (the stream is append-only and every entry is signed with its sequence
 * and the hash of the one before), so an entry read once is the entry every later reader would get.
 */
export class SharedLogReads {
  readonly #entries = new Map<string, Promise<LogEntry>>();
  readonly #size: number;

  /** `size`: entries remembered at most (default {@link SHARED_LOG_READS_SIZE}). */
  constructor(size = SHARED_LOG_READS_SIZE) {
    assertInteger('size', size, 1, Number.MAX_SAFE_INTEGER);
    this.#size = size;
  }

  /** Entries remembered now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Entry `sequence` of `stream` (signed by `coordinator`): the one already read, or `read()`'s. A
   * failed read is not remembered; concurrent readers of one entry wait for the same read.
   */
  read(
    stream: string,
    coordinator: string,
    sequence: number,
    read: () => Promise<LogEntry>,
  ): Promise<LogEntry> {
    const key = `${stream}\u0000${coordinator}\u0000${sequence}`;
    const known = this.#entries.get(key);
    if (known !== undefined) return known;
    const p = read();
    this.#entries.set(key, p);
    p.catch(() => {
      if (this.#entries.get(key) === p) this.#entries.delete(key);
    });
    if (this.#entries.size > this.#size) this.#entries.delete(this.#entries.keys().next().value!);
    return p;
  }
}
