import { setImmediate as nextMacrotask } from 'node:timers/promises';
import {
  ClosedConnectionError,
  headers as createHeaders,
  type NatsConnection,
  PermissionViolationError,
} from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { backoffDelay, sleep } from '../retry/index.ts';
import { crcHex, FRAME_HEADER_BUDGET, FRAME_HEADERS, MIN_CHUNK_BYTES, splitChunks } from './chunk-frame.ts';
import type { NatsTransportOptions } from './connect-transport.ts';
import {
  CHUNK_ERROR_REASONS,
  DropCounter,
  type TransportDropCounts,
  type TransportDropReason,
} from './drop-reason.ts';
import { assertHeaders, userHeaderBytes } from './message-headers.ts';
import { NatsSubscription } from './nats-subscription.ts';
import { randomId } from './random-id.ts';
import { ReplyInbox } from './reply-inbox.ts';
import { ANY_INBOX, type ReplyPolicy, replyAllowed } from './reply-policy.ts';
import { assertSubject } from './subject-check.ts';
import type {
  MessageHandler,
  MessageHeaders,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportSubscription,
} from './transport.ts';
import { errorMessage, TransportError } from './transport-error.ts';
import {
  assertReceiveLimits,
  type ReceiveLimits,
  resolveLimits,
  TRANSPORT_DEFAULTS,
} from './transport-limits.ts';

/** Counters of a whole transport (its reply inbox and every subscription it ever had). */
export interface NatsTransportStats {
  /** Request attempts after the first. */
  readonly retries: number;
  /** Permission violations reported by the server. */
  readonly permissionErrors: number;
  /** Corrupt chunks seen on any subscription or the reply inbox (`FRAME_MALFORMED`, `CRC_MISMATCH`, `CHUNK_MISMATCH`, `OVERSIZE`). */
  readonly chunkErrors: number;
  /** Every chunk or message dropped, by reason. */
  readonly dropped: TransportDropCounts;
}

/** What a subscription inherits from its transport. @internal */
export interface ReceiveDefaults {
  readonly limits: ReceiveLimits;
  readonly reassemblyTimeoutMs: number;
  readonly seenCacheSize: number;
}

interface PublishWatcher {
  error?: TransportError;
}

function assertBytes(name: string, data: unknown): asserts data is Uint8Array {
  if (!(data instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${name} must be a Uint8Array`, { details: { name } });
  }
}

function remoteError(subject: string, text: string): TransportError {
  const space = text.indexOf(' ');
  const code = space > 0 ? text.slice(0, space) : text;
  const message = space > 0 ? text.slice(space + 1) : '';
  return new TransportError('TRANSPORT_REMOTE', `handler on ${subject} failed: ${code}: ${message}`, {
    details: { subject, remoteCode: code, remoteMessage: message },
  });
}

/**
 * {@link Transport} on a NATS connection (`@nats-io/transport-node`). Payloads over the
 * server's `max_payload` travel as CRC-checked chunks; requests retry with one message id so
 * subscribers answer a retry from their reply cache instead of handling it twice; the server's
 * asynchronous permission violations are turned into `TRANSPORT_PERMISSION` rejections of the
 * publish, request or subscription concerned. Message ids, reply tokens and the inbox base are
 * 128-bit random; every inbound chunk is checked cheapest first and every drop is counted.
 */
export class NatsTransport implements Transport {
  /** The underlying connection, for JetStream, KV and object store clients. */
  readonly connection: NatsConnection;
  readonly #options: NatsTransportOptions;
  readonly #maxRetry: number;
  readonly #timeoutMs: number;
  readonly #inbox: ReplyInbox;
  readonly #watchers = new Map<string, Set<PublishWatcher>>();
  readonly #subscriptions = new Set<NatsSubscription>();
  readonly #dropped = new DropCounter();
  readonly #replyPolicy: ReplyPolicy;
  #closed = false;
  #retries = 0;
  #permissionErrors = 0;

  /** Use `connectTransport` (connect-transport.ts). */
  constructor(nc: NatsConnection, options: NatsTransportOptions, inboxPrefix: string) {
    this.connection = nc;
    this.#options = options;
    this.#maxRetry = options.maxRetry ?? TRANSPORT_DEFAULTS.maxRetry;
    this.#timeoutMs = options.timeoutMs ?? TRANSPORT_DEFAULTS.timeoutMs;
    this.#replyPolicy = options.replyPolicy ?? ANY_INBOX;
    this.#inbox = new ReplyInbox(nc, inboxPrefix, {
      limits: resolveLimits(options),
      reassemblyTimeoutMs: this.receiveDefaults.reassemblyTimeoutMs,
      onDrop: (reason, subject, fault) => {
        this.countDrop(reason);
        if (fault !== undefined) this.report(fault.toError(subject));
      },
      onError: (err) => this.report(this.translate(err, 'reply inbox')),
    });
    void this.watchStatus();
  }

  /** Largest payload the connected server accepts in one message, bytes. */
  get maxPayload(): number {
    return this.connection.info?.max_payload ?? 1024 * 1024;
  }

  /** Transport-wide counters. */
  stats(): NatsTransportStats {
    return {
      retries: this.#retries,
      permissionErrors: this.#permissionErrors,
      chunkErrors: this.#dropped.sum(CHUNK_ERROR_REASONS),
      dropped: this.#dropped.snapshot(),
    };
  }

  async publish(subject: string, data: Uint8Array, headers?: MessageHeaders): Promise<void> {
    assertSubject('subject', subject, false);
    assertBytes('data', data);
    assertHeaders('headers', headers);
    this.assertOpen();
    await this.send(subject, data, randomId(), headers, undefined, undefined);
  }

  async request(subject: string, data: Uint8Array, opts: RequestOptions = {}): Promise<Uint8Array> {
    assertSubject('subject', subject, false);
    assertBytes('data', data);
    assertHeaders('opts.headers', opts.headers);
    const timeoutMs = opts.timeoutMs ?? this.#timeoutMs;
    const maxRetry = opts.maxRetry ?? this.#maxRetry;
    assertInteger('opts.timeoutMs', timeoutMs, 1, 600_000);
    assertInteger('opts.maxRetry', maxRetry, 0, 100);
    this.assertOpen();
    const id = randomId();
    const pending = this.#inbox.open();
    let last: 'timeout' | 'noResponders' = 'timeout';
    try {
      for (let attempt = 0; attempt <= maxRetry; attempt++) {
        if (attempt > 0) this.#retries++;
        this.assertOpen();
        const started = Date.now();
        try {
          await this.send(subject, data, id, opts.headers, pending.reply, undefined);
        } catch (err) {
          // Unconfirmed by the server (e.g. while reconnecting): count it as a timed-out attempt.
          if (!(err instanceof TransportError && err.code === 'TRANSPORT_TIMEOUT')) throw err;
          last = 'timeout';
          continue;
        }
        const outcome = await this.#inbox.wait(pending, Math.max(1, timeoutMs - (Date.now() - started)));
        this.assertOpen();
        if (outcome?.kind === 'reply') return outcome.data;
        if (outcome?.kind === 'remote') throw remoteError(subject, outcome.error);
        if (outcome?.kind === 'noResponders') {
          last = 'noResponders';
          pending.outcome = undefined;
          // Nobody listens yet: back off (bounded by the attempt timeout) before trying again.
          if (attempt < maxRetry)
            await sleep(backoffDelay(attempt + 1, { baseMs: 50, maxMs: Math.max(50, timeoutMs) }));
        } else {
          last = 'timeout';
        }
      }
    } finally {
      this.#inbox.release(pending);
    }
    const attempts = maxRetry + 1;
    if (last === 'noResponders') {
      throw new TransportError(
        'TRANSPORT_NO_RESPONDERS',
        `request on ${subject}: no subscriber after ${attempts} attempt(s)`,
        { details: { subject, attempts, messageId: id } },
      );
    }
    throw new TransportError(
      'TRANSPORT_TIMEOUT',
      `request on ${subject}: no reply within ${timeoutMs} ms on any of ${attempts} attempt(s)`,
      { details: { subject, attempts, timeoutMs, messageId: id } },
    );
  }

  subscribe(subject: string, handler: MessageHandler, opts: SubscribeOptions = {}): TransportSubscription {
    assertSubject('subject', subject, true);
    if (typeof handler !== 'function') {
      throw new InvalidArgumentError('handler must be a function', { details: { name: 'handler' } });
    }
    if (opts.queue !== undefined && !/^[A-Za-z0-9_.-]{1,128}$/.test(opts.queue)) {
      throw new InvalidArgumentError('opts.queue must be 1-128 characters of A-Z, a-z, 0-9, ".", "-", "_"', {
        details: { name: 'opts.queue', value: String(opts.queue) },
      });
    }
    assertReceiveLimits('opts.', opts);
    for (const name of ['onError', 'onDrop'] as const) {
      if (opts[name] !== undefined && typeof opts[name] !== 'function') {
        throw new InvalidArgumentError(`opts.${name} must be a function`, {
          details: { name: `opts.${name}` },
        });
      }
    }
    this.assertOpen();
    const s = new NatsSubscription(this, subject, handler, opts);
    this.#subscriptions.add(s);
    void s.closed.then(() => this.#subscriptions.delete(s));
    return s;
  }

  async flush(): Promise<void> {
    this.assertOpen();
    try {
      await this.connection.flush();
    } catch (err) {
      throw this.translate(err, 'flush');
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#inbox.close();
    for (const s of [...this.#subscriptions]) s.end(undefined);
    try {
      if (!this.connection.isClosed()) await this.connection.drain();
    } catch {
      await this.connection.close();
    }
  }

  // ---- internals shared with NatsSubscription (not part of the Transport interface) ----

  /** @internal Limits and settings a new subscription starts from. */
  get receiveDefaults(): ReceiveDefaults {
    const o = this.#options;
    return {
      limits: o,
      reassemblyTimeoutMs: o.reassemblyTimeoutMs ?? TRANSPORT_DEFAULTS.reassemblyTimeoutMs,
      seenCacheSize: o.seenCacheSize ?? TRANSPORT_DEFAULTS.seenCacheSize,
    };
  }

  /** @internal Whether a request received on `subject` may be answered on `reply` (the transport's {@link ReplyPolicy}). */
  replyAllowed(subject: string, reply: string): boolean {
    return replyAllowed(this.#replyPolicy, subject, reply);
  }

  /** @internal Counts one drop in the transport-wide counters. */
  countDrop(reason: TransportDropReason): void {
    this.#dropped.add(reason);
  }

  /** @internal Publishes one framed message (chunked as needed) and waits until the server processed it. */
  async send(
    subject: string,
    data: Uint8Array,
    id: string,
    userHeaders: MessageHeaders | undefined,
    reply: string | undefined,
    errorText: string | undefined,
  ): Promise<void> {
    const budget = FRAME_HEADER_BUDGET + userHeaderBytes(userHeaders) + (errorText?.length ?? 0) + 16;
    const chunkSize = this.maxPayload - budget;
    if (chunkSize < MIN_CHUNK_BYTES) {
      throw new InvalidArgumentError(`headers too large for the server's max_payload (${this.maxPayload})`, {
        details: { name: 'headers', maxPayload: this.maxPayload, headerBytes: budget },
      });
    }
    const chunks = splitChunks(data, chunkSize);
    const watcher: PublishWatcher = {};
    let set = this.#watchers.get(subject);
    if (set === undefined) {
      set = new Set();
      this.#watchers.set(subject, set);
    }
    set.add(watcher);
    try {
      chunks.forEach((chunk, index) => {
        const h = createHeaders();
        h.set(FRAME_HEADERS.id, id);
        h.set(FRAME_HEADERS.chunk, `${index}/${chunks.length}`);
        h.set(FRAME_HEADERS.length, String(data.length));
        h.set(FRAME_HEADERS.crc, crcHex(chunk));
        if (index === 0) {
          if (errorText !== undefined) h.set(FRAME_HEADERS.error, errorText);
          for (const [k, v] of Object.entries(userHeaders ?? {})) h.set(k, v);
        }
        this.connection.publish(subject, chunk, reply === undefined ? { headers: h } : { headers: h, reply });
      });
      await this.confirm(subject);
      // The server writes a permission -ERR before the PONG that ends the flush; the client
      // dispatches it through a status iterator, so let pending microtasks run first.
      await nextMacrotask();
    } catch (err) {
      if (err instanceof InvalidArgumentError) throw err;
      throw this.translate(err, subject);
    } finally {
      set.delete(watcher);
      if (set.size === 0) this.#watchers.delete(subject);
    }
    if (watcher.error !== undefined) throw watcher.error;
  }

  /** @internal */
  report(err: TransportError): void {
    try {
      this.#options.onError?.(err);
    } catch {
      // a failing error listener must not break the transport
    }
  }

  /** @internal Maps a client error to a {@link TransportError}. */
  translate(err: unknown, subject: string): TransportError {
    if (err instanceof TransportError) return err;
    if (err instanceof PermissionViolationError) {
      return new TransportError(
        'TRANSPORT_PERMISSION',
        `permission denied: ${err.operation} on ${err.subject}${err.queue ? ` (queue ${err.queue})` : ''}`,
        { cause: err, details: { operation: err.operation, subject: err.subject, queue: err.queue } },
      );
    }
    if (err instanceof ClosedConnectionError || this.#closed || this.connection.isClosed()) {
      return new TransportError('TRANSPORT_CLOSED', `transport closed (${subject})`, {
        cause: err,
        details: { subject },
      });
    }
    return new TransportError('TRANSPORT_CONNECT', `${subject}: ${errorMessage(err)}`, {
      cause: err,
      details: { subject },
    });
  }

  /** @internal */
  assertOpen(): void {
    if (this.#closed || this.connection.isClosed()) {
      throw new TransportError('TRANSPORT_CLOSED', 'transport is closed');
    }
  }

  /** Waits for the server to acknowledge everything sent so far, at most `timeoutMs`. */
  private async confirm(subject: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new TransportError(
              'TRANSPORT_TIMEOUT',
              `publish on ${subject}: server did not confirm within ${this.#timeoutMs} ms`,
              { details: { subject, timeoutMs: this.#timeoutMs } },
            ),
          ),
        this.#timeoutMs,
      );
    });
    try {
      await Promise.race([this.connection.flush(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async watchStatus(): Promise<void> {
    for await (const s of this.connection.status()) {
      if (s.type !== 'error') continue;
      const err = this.translate(s.error, 'connection');
      if (s.error instanceof PermissionViolationError) {
        this.#permissionErrors++;
        if (s.error.operation === 'publish') {
          for (const w of this.#watchers.get(s.error.subject) ?? []) w.error = err;
        }
      }
      this.report(err);
    }
  }
}
