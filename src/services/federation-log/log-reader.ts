import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  type StoredMsg,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import type { KeyLookup } from '../../protocol/index.ts';
import { federationSubjects } from '../../transport/index.ts';
import { checkLink, LOG_ORIGIN, type LogEntry, type LogPosition, openLogEntry } from './log-entry.ts';
import { FederationLogError } from './log-error.ts';
import { logStreamName } from './log-stream.ts';
import type { SharedLogReads } from './shared-log-reads.ts';

/** Read access to a federation's log (what a site, an auditor or the coordinator may do). */
export interface FederationLogReader {
  readonly stream: string;
  readonly subject: string;
  /** Sequence of the last entry, 0 when the log is empty or its stream does not exist yet. */
  lastSequence(): Promise<number>;
  /** Entry `sequence`, its signature, federation and claimed sequence checked (not its link). */
  get(sequence: number): Promise<LogEntry>;
  /**
   * The entries after `from` (default: from the first), each checked to link to the one before
   * it — the first to `from` itself — up to `until` (default: the last entry when called).
   * Entries are fetched `window` at a time ahead of the consumer. Every entry yielded is
   * authenticated: its own signature checked, or (`signatures: 'chain'`) that of a later entry
   * it links to, checked before it is yielded.
   */
  entries(from?: LogPosition, until?: number): AsyncIterable<LogEntry>;
}

/** Options of {@link openLogReader}. */
export interface LogReaderOptions {
  readonly federation: string;
  /** Member id whose signature every entry must carry (the coordinator). */
  readonly coordinator: string;
  /** Public keys; `keys(coordinator)` must be the coordinator's. */
  readonly keys: KeyLookup;
  /** Entries fetched ahead of the consumer (default 16). */
  readonly window?: number;
  /**
   * How {@link FederationLogReader.entries} authenticates entries. `every` (default): each entry's
   * signature is checked. `chain`: of each run of up to `window` linked entries, only the last
   * one's signature is checked before the run is yielded; its `previousEntry` hashes bind every
   * entry before it (SHA-256), so the run is as authentic as that one signature, for one
   * signature check per `window` entries instead of one per entry. For a follower that needs
   * what the log holds, not which entry a broken coordinator mis-signed (an auditor keeps
   * `every`).
   */
  readonly signatures?: 'every' | 'chain';
  /** Entries shared with the other readers given the same one (a swarm's sites); none by default. */
  readonly shared?: SharedLogReads;
}

/**
 * Opens the log of `federation` for reading on `nc`. Needs only the read-only JetStream API
 * subjects of the log stream (`$JS.API.STREAM.INFO.<stream>`, `$JS.API.STREAM.MSG.GET.<stream>`):
 * it never creates consumers and skips the account check, so a site's or an auditor's NATS user
 * suffices. Every failure to reach JetStream is `LOG_UNAVAILABLE` with the cause chained.
 */
export async function openLogReader(
  nc: NatsConnection,
  options: LogReaderOptions,
): Promise<FederationLogReader> {
  const window = options.window ?? 16;
  assertInteger('options.window', window, 1, 1024);
  if (typeof options.coordinator !== 'string' || options.coordinator.length === 0) {
    throw new InvalidArgumentError('options.coordinator must name the coordinator', {
      details: { name: 'options.coordinator' },
    });
  }
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  if (options.signatures !== undefined && options.signatures !== 'every' && options.signatures !== 'chain') {
    throw new InvalidArgumentError(
      `options.signatures must be 'every' or 'chain', not ${options.signatures}`,
      {
        details: { name: 'options.signatures' },
      },
    );
  }
  return new JetStreamLogReader(jsm, options, window);
}

/** Entries whose signature this process checked (opened with it, or checked later). */
const signatureChecked = new WeakSet<LogEntry>();

class JetStreamLogReader implements FederationLogReader {
  readonly stream: string;
  readonly subject: string;
  readonly #jsm: JetStreamManager;
  readonly #options: LogReaderOptions;
  readonly #window: number;

  constructor(jsm: JetStreamManager, options: LogReaderOptions, window: number) {
    this.#jsm = jsm;
    this.#options = options;
    this.#window = window;
    this.stream = logStreamName(options.federation);
    this.subject = federationSubjects(options.federation).log;
  }

  async lastSequence(): Promise<number> {
    try {
      const info = await this.#jsm.streams.info(this.stream);
      return info.state.last_seq;
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return 0;
      throw this.#unavailable('cannot read the stream state', err);
    }
  }

  async get(sequence: number): Promise<LogEntry> {
    assertInteger('sequence', sequence, 1, Number.MAX_SAFE_INTEGER);
    const entry = await this.#fetch(sequence);
    this.#checkSignature(entry);
    return entry;
  }

  /**
   * Entry `sequence`, checked; its signature too unless this reader authenticates by chain (from
   * `options.shared` when the entry was read there already).
   */
  #fetch(sequence: number): Promise<LogEntry> {
    const shared = this.#options.shared;
    if (shared === undefined) return this.#read(sequence);
    return shared.read(this.stream, this.#options.coordinator, sequence, () => this.#read(sequence));
  }

  /** Checks `entry`'s signature once per process: an entry object never changes. */
  #checkSignature(entry: LogEntry): void {
    if (signatureChecked.has(entry)) return;
    openLogEntry(entry.bytes, entry.sequence, this.#context());
    signatureChecked.add(entry);
  }

  #context() {
    return {
      federation: this.#options.federation,
      coordinator: this.#options.coordinator,
      keys: this.#options.keys,
      stream: this.stream,
    };
  }

  async #read(sequence: number): Promise<LogEntry> {
    let msg: StoredMsg | null;
    try {
      msg = await this.#jsm.streams.getMessage(this.stream, { seq: sequence });
    } catch (err) {
      throw this.#unavailable(`cannot read entry ${sequence}`, err);
    }
    if (msg === null || msg.seq !== sequence) {
      throw new FederationLogError('LOG_CHAIN_BROKEN', `log ${this.stream} has no entry ${sequence}`, {
        details: { stream: this.stream, sequence },
      });
    }
    if (msg.subject !== this.subject) {
      throw new FederationLogError(
        'LOG_ENTRY_INVALID',
        `log ${this.stream} entry ${sequence} is on subject ${msg.subject}, not ${this.subject}`,
        { details: { stream: this.stream, sequence } },
      );
    }
    if (this.#options.signatures === 'chain') {
      return openLogEntry(msg.data, sequence, this.#context(), { signature: 'later' });
    }
    const entry = openLogEntry(msg.data, sequence, this.#context());
    signatureChecked.add(entry);
    return entry;
  }

  async *entries(from: LogPosition = LOG_ORIGIN, until?: number): AsyncIterable<LogEntry> {
    assertInteger('from.sequence', from.sequence, 0, Number.MAX_SAFE_INTEGER);
    const last = until ?? (await this.lastSequence());
    if (last < from.sequence) {
      throw new FederationLogError(
        'LOG_BEHIND',
        `log ${this.stream} ends at entry ${last}, before entry ${from.sequence} already read`,
        { details: { stream: this.stream, last, from: from.sequence } },
      );
    }
    let previous: LogPosition = from;
    const pending: Promise<LogEntry>[] = [];
    let next = from.sequence + 1;
    const fill = () => {
      while (pending.length < this.#window && next <= last) {
        const p = this.#fetch(next++);
        p.catch(() => undefined); // awaited in order below; keeps an early failure from going unhandled
        pending.push(p);
      }
    };
    fill();
    const chain = this.#options.signatures === 'chain';
    const run: LogEntry[] = [];
    while (pending.length > 0) {
      const entry = await pending.shift()!;
      fill();
      checkLink(entry, previous, this.stream);
      previous = entry;
      if (!chain) {
        this.#checkSignature(entry);
        yield entry;
        continue;
      }
      run.push(entry);
      if (pending.length === 0 || run.length >= this.#window) {
        // The run's last entry links (by hash) to every one before it: its signature covers them.
        this.#checkSignature(entry);
        yield* run;
        run.length = 0;
      }
    }
  }

  #unavailable(what: string, cause: unknown): FederationLogError {
    return new FederationLogError(
      'LOG_UNAVAILABLE',
      `log ${this.stream}: ${what}: ${(cause as Error)?.message ?? String(cause)}`,
      { cause, details: { stream: this.stream } },
    );
  }
}
