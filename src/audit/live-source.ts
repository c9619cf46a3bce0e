import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  type StoredMsg,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { encodeContribution } from '../round/index.ts';
import { logStreamName } from '../services/federation-log/index.ts';
import {
  aggregateStore,
  type ContributionKey,
  DEFAULT_STORE_TIMEOUT_MS,
  readStoredContribution,
  readWriteOnceObject,
  StoreError,
  type WriteOnceStore,
} from '../services/store/index.ts';
import { AuditError } from './audit-error.ts';
import type { AggregateRead, AuditSource, ContributionRead, StoredEntry } from './audit-source.ts';

/** Options of {@link openLiveAuditSource}. */
export interface LiveAuditSourceOptions {
  readonly federation: string;
  /** The member whose NATS user `nc` is (for the report). */
  readonly member: string;
  /** Entries requested ahead of the audit (default 16). */
  readonly window?: number;
  /** Wait for each JetStream API request, in ms (default {@link DEFAULT_STORE_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
}

/**
 * A live {@link AuditSource} on `nc`: the log's stored entries (`$JS.API.STREAM.INFO` and
 * `STREAM.MSG.GET` of the log stream only, no consumer, no account check), aggregates
 * (`readWriteOnceObject`, get-message only) of the aggregates stream, and contributions
 * (`readStoredContribution`: info and get-message of the contributions stream), so a read-only NATS
 * user suffices: an auditor's reads all three, a site's the log and the aggregates (not the
 * contributions: its audit then lists every re-addition as not made). A failure to read the log
 * is `AUDIT_SOURCE_UNAVAILABLE`; one to read an aggregate or a contribution is an `unavailable`
 * answer (the audit lists it as not checked).
 */
export async function openLiveAuditSource(
  nc: NatsConnection,
  options: LiveAuditSourceOptions,
): Promise<AuditSource> {
  if (typeof nc !== 'object' || nc === null || typeof (nc as { request?: unknown }).request !== 'function') {
    throw new InvalidArgumentError('nc must be a NATS connection', { details: { name: 'nc' } });
  }
  const window = options.window ?? 16;
  assertInteger('options.window', window, 1, 1024);
  const timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
  assertInteger('options.timeoutMs', timeoutMs, 1, 600_000);
  const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: timeoutMs });
  return new LiveSource(nc, jsm, options, window, timeoutMs, aggregateStore(options.federation));
}

class LiveSource implements AuditSource {
  readonly kind = 'live' as const;
  readonly federation: string;
  readonly stream: string;
  readonly member: string;
  readonly exportedUnixMs = null;
  readonly #nc: NatsConnection;
  readonly #jsm: JetStreamManager;
  readonly #window: number;
  readonly #timeoutMs: number;
  readonly #aggregates: WriteOnceStore;

  constructor(
    nc: NatsConnection,
    jsm: JetStreamManager,
    options: LiveAuditSourceOptions,
    window: number,
    timeoutMs: number,
    aggregates: WriteOnceStore,
  ) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.federation = options.federation;
    this.member = options.member;
    this.stream = logStreamName(options.federation);
    this.#window = window;
    this.#timeoutMs = timeoutMs;
    this.#aggregates = aggregates;
  }

  readAtUnixMs(): number {
    return Date.now();
  }

  async lastSequence(): Promise<number> {
    try {
      return (await this.#jsm.streams.info(this.stream)).state.last_seq;
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return 0;
      throw this.#unavailable('cannot read the stream state', err);
    }
  }

  async #get(sequence: number): Promise<StoredMsg | null> {
    try {
      return await this.#jsm.streams.getMessage(this.stream, { seq: sequence });
    } catch (err) {
      throw this.#unavailable(`cannot read entry ${sequence}`, err);
    }
  }

  async *entries(until: number): AsyncIterable<StoredEntry> {
    assertInteger('until', until, 0, Number.MAX_SAFE_INTEGER);
    const pending: Promise<StoredMsg | null>[] = [];
    let next = 1;
    const fill = () => {
      while (pending.length < this.#window && next <= until) {
        const p = this.#get(next++);
        p.catch(() => undefined); // awaited in order below
        pending.push(p);
      }
    };
    fill();
    while (pending.length > 0) {
      const msg = await pending.shift()!;
      fill();
      // A removed entry is skipped: the audit reports the gap at the entry after it.
      if (msg !== null) yield { sequence: msg.seq, bytes: msg.data };
    }
  }

  aggregate(name: string, maxBytes: number): Promise<AggregateRead> {
    return this.#read(this.#aggregates, name, maxBytes);
  }

  async contribution(key: ContributionKey, maxBytes: number, maxFrames: number): Promise<ContributionRead> {
    let read: Awaited<ReturnType<typeof readStoredContribution>>;
    try {
      read = await readStoredContribution(this.#nc, this.federation, key, {
        maxBytes,
        maxFrames,
        timeoutMs: this.#timeoutMs,
      });
    } catch (err) {
      return { status: 'unavailable', reason: (err as Error).message };
    }
    switch (read.status) {
      case 'found':
      case 'overwritten': {
        const [manifest, ...blocks] = read.frames;
        const bytes = encodeContribution({ manifest: manifest!, blocks });
        return read.status === 'found'
          ? { status: 'found', bytes }
          : { status: 'overwritten', bytes, reason: read.reason };
      }
      default:
        return read;
    }
  }

  async #read(store: WriteOnceStore, name: string, maxBytes: number): Promise<AggregateRead> {
    let bytes: Uint8Array | null;
    try {
      bytes = await readWriteOnceObject(this.#nc, store, name, { maxBytes, timeoutMs: this.#timeoutMs });
    } catch (err) {
      if (err instanceof StoreError) {
        if (err.code === 'BUCKET_NOT_FOUND') return { status: 'absent' };
        if (err.code === 'OBJECT_TOO_LARGE') return { status: 'too-large', reason: err.message };
        if (err.code === 'OBJECT_CORRUPT' || err.code === 'OBJECT_UNSUPPORTED') {
          return { status: 'corrupt', reason: err.message };
        }
      }
      return { status: 'unavailable', reason: (err as Error).message };
    }
    return bytes === null ? { status: 'absent' } : { status: 'found', bytes };
  }

  #unavailable(what: string, cause: unknown): AuditError {
    return new AuditError(
      'AUDIT_SOURCE_UNAVAILABLE',
      `log ${this.stream}: ${what}: ${(cause as Error)?.message ?? String(cause)}`,
      { cause, details: { stream: this.stream } },
    );
  }
}
