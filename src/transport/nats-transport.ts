import { readFileSync } from 'node:fs';
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import {
  ClosedConnectionError,
  connect,
  headers as createHeaders,
  credsAuthenticator,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type NodeConnectionOptions,
  nuid,
  PermissionViolationError,
  type Subscription,
} from '@nats-io/transport-node';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import {
  crcHex,
  FRAME_HEADER_BUDGET,
  FRAME_HEADERS,
  parseChunkFrame,
  RESERVED_HEADER_PREFIX,
  splitChunks,
} from './chunk-frame.ts';
import { Reassembler } from './reassembler.ts';
import { SeenCache } from './seen-cache.ts';
import { assertSubject } from './subject-check.ts';
import type {
  InboundMessage,
  MessageHandler,
  MessageHeaders,
  RequestOptions,
  SubscribeOptions,
  SubscriptionStats,
  Transport,
  TransportSubscription,
} from './transport.ts';
import { TransportError } from './transport-error.ts';

/** Options of {@link connectTransport}. */
export interface NatsTransportOptions {
  /** Server URLs (`nats://host:port`), tried in order. */
  readonly servers: readonly string[];
  /** Connection name shown by the server (e.g. `site-a`). */
  readonly name: string;
  /** Reply-inbox prefix (see `FederationSubjects.inboxPrefix`); default `_INBOX`. */
  readonly inboxPrefix?: string;
  /** Path of a NATS `.creds` file (JWT + nkey seed). */
  readonly credentials?: string;
  /** User name (with `pass`), as in a generated `authorization` block. */
  readonly user?: string;
  readonly pass?: string;
  /** Retries of a request after its first attempt; default 5 (config `nats.maxRetry`). */
  readonly maxRetry?: number;
  /** Reply wait per request attempt and publish confirmation wait, ms; default 3000 (`nats.timeoutMs`). */
  readonly timeoutMs?: number;
  /** An incomplete chunked message is dropped this long after its first chunk; default 30000 ms. */
  readonly reassemblyTimeoutMs?: number;
  /** Largest whole message accepted from the wire; default 256 MiB. */
  readonly maxMessageBytes?: number;
  /** Incomplete messages buffered per subscription; default 64. */
  readonly maxPendingMessages?: number;
  /** Bytes buffered for incomplete messages per subscription; default 512 MiB. */
  readonly maxPendingBytes?: number;
  /** Message ids (with replies) remembered per subscription for de-duplication; default 4096. */
  readonly seenCacheSize?: number;
  /** Errors that reach no caller: permission violations, connection errors, subscription errors. */
  readonly onError?: (err: TransportError) => void;
}

/** Counters of a whole transport. */
export interface NatsTransportStats {
  /** Request attempts after the first. */
  readonly retries: number;
  /** Permission violations reported by the server. */
  readonly permissionErrors: number;
  /** Corrupt chunks seen on any subscription or the reply inbox. */
  readonly chunkErrors: number;
}

type Outcome =
  | { readonly kind: 'reply'; readonly data: Uint8Array }
  | { readonly kind: 'remote'; readonly error: string }
  | { readonly kind: 'noResponders' };

interface PendingRequest {
  outcome?: Outcome;
  wake?: () => void;
}

interface PublishWatcher {
  error?: TransportError;
}

const DEFAULTS = {
  maxRetry: 5,
  timeoutMs: 3000,
  reassemblyTimeoutMs: 30_000,
  maxMessageBytes: 256 * 1024 * 1024,
  maxPendingMessages: 64,
  maxPendingBytes: 512 * 1024 * 1024,
  seenCacheSize: 4096,
} as const;

function userHeaderBytes(h: MessageHeaders | undefined): number {
  if (h === undefined) return 0;
  let n = 0;
  for (const [k, v] of Object.entries(h)) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 4;
  return n;
}

function assertHeaders(name: string, h: unknown): asserts h is MessageHeaders | undefined {
  if (h === undefined) return;
  if (typeof h !== 'object' || h === null) {
    throw new InvalidArgumentError(`${name} must be an object of string values`, { details: { name } });
  }
  for (const [k, v] of Object.entries(h)) {
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(k) || k.toLowerCase().startsWith(RESERVED_HEADER_PREFIX)) {
      throw new InvalidArgumentError(
        `${name}: header name ${JSON.stringify(k)} is invalid or uses the reserved "Cohort-" prefix`,
        { details: { name, header: k } },
      );
    }
    if (typeof v !== 'string' || /[\r\n]/.test(v)) {
      throw new InvalidArgumentError(`${name}: header ${k} must be a single-line string`, {
        details: { name, header: k },
      });
    }
  }
}

function assertBytes(name: string, data: unknown): asserts data is Uint8Array {
  if (!(data instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${name} must be a Uint8Array`, { details: { name } });
  }
}

function readHeaders(h: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (h === undefined) return out;
  for (const k of h.keys()) {
    if (!k.toLowerCase().startsWith(RESERVED_HEADER_PREFIX)) out[k] = h.get(k);
  }
  return out;
}

function remoteError(subject: string, text: string): TransportError {
  const space = text.indexOf(' ');
  const code = space > 0 ? text.slice(0, space) : text;
  const message = space > 0 ? text.slice(space + 1) : '';
  return new TransportError('TRANSPORT_REMOTE', `handler on ${subject} failed: ${code}: ${message}`, {
    details: { subject, remoteCode: code, remoteMessage: message },
  });
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * {@link Transport} on a NATS connection (`@nats-io/transport-node`). Payloads over the
 * server's `max_payload` travel as CRC-checked chunks; requests retry with one message id so
 * subscribers answer a retry from their reply cache instead of handling it twice; the server's
 * asynchronous permission violations are turned into `TRANSPORT_PERMISSION` rejections of the
 * publish, request or subscription concerned.
 */
export class NatsTransport implements Transport {
  /** The underlying connection, for JetStream, KV and object store clients. */
  readonly connection: NatsConnection;
  readonly #options: NatsTransportOptions;
  readonly #maxRetry: number;
  readonly #timeoutMs: number;
  readonly #inboxBase: string;
  readonly #inboxReassembler: Reassembler;
  readonly #requests = new Map<string, PendingRequest>();
  readonly #watchers = new Map<string, Set<PublishWatcher>>();
  readonly #subscriptions = new Set<NatsSubscription>();
  #closed = false;
  #retries = 0;
  #permissionErrors = 0;
  #chunkErrors = 0;

  /** Use {@link connectTransport}. */
  constructor(nc: NatsConnection, options: NatsTransportOptions, inboxPrefix: string) {
    this.connection = nc;
    this.#options = options;
    this.#maxRetry = options.maxRetry ?? DEFAULTS.maxRetry;
    this.#timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
    this.#inboxBase = `${inboxPrefix}.${nuid.next()}`;
    this.#inboxReassembler = this.newReassembler();
    nc.subscribe(`${this.#inboxBase}.*`, {
      callback: (err, msg) => {
        if (err) this.report(this.translate(err, 'reply inbox'));
        else this.onInboxMessage(msg);
      },
    });
    void this.watchStatus();
  }

  /** Largest payload the connected server accepts in one message, bytes. */
  get maxPayload(): number {
    return this.connection.info?.max_payload ?? 1024 * 1024;
  }

  /** Transport-wide counters. */
  stats(): NatsTransportStats {
    let chunkErrors = this.#chunkErrors;
    for (const s of this.#subscriptions) chunkErrors += s.stats().chunkErrors;
    return { retries: this.#retries, permissionErrors: this.#permissionErrors, chunkErrors };
  }

  async publish(subject: string, data: Uint8Array, headers?: MessageHeaders): Promise<void> {
    assertSubject('subject', subject, false);
    assertBytes('data', data);
    assertHeaders('headers', headers);
    this.assertOpen();
    await this.send(subject, data, nuid.next(), headers, undefined, undefined);
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
    const id = nuid.next();
    const token = nuid.next();
    const reply = `${this.#inboxBase}.${token}`;
    const pending: PendingRequest = {};
    this.#requests.set(token, pending);
    let last: 'timeout' | 'noResponders' = 'timeout';
    try {
      for (let attempt = 0; attempt <= maxRetry; attempt++) {
        if (attempt > 0) this.#retries++;
        this.assertOpen();
        const started = Date.now();
        try {
          await this.send(subject, data, id, opts.headers, reply, undefined);
        } catch (err) {
          // Unconfirmed by the server (e.g. while reconnecting): count it as a timed-out attempt.
          if (!(err instanceof TransportError && err.code === 'TRANSPORT_TIMEOUT')) throw err;
          last = 'timeout';
          continue;
        }
        const outcome = await this.waitOutcome(pending, Math.max(1, timeoutMs - (Date.now() - started)));
        this.assertOpen();
        if (outcome?.kind === 'reply') return outcome.data;
        if (outcome?.kind === 'remote') throw remoteError(subject, outcome.error);
        if (outcome?.kind === 'noResponders') {
          last = 'noResponders';
          pending.outcome = undefined;
          // Nobody listens yet: back off (bounded by the attempt timeout) before trying again.
          if (attempt < maxRetry)
            await new Promise((r) => setTimeout(r, Math.min(timeoutMs, 50 * 2 ** attempt)));
        } else {
          last = 'timeout';
        }
      }
    } finally {
      this.#requests.delete(token);
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
    for (const p of this.#requests.values()) p.wake?.();
    for (const s of [...this.#subscriptions]) s.end(undefined);
    this.#inboxReassembler.clear();
    try {
      if (!this.connection.isClosed()) await this.connection.drain();
    } catch {
      await this.connection.close();
    }
  }

  // ---- internals shared with NatsSubscription (not part of the Transport interface) ----

  /** @internal */
  newReassembler(onDrop?: (id: string) => void): Reassembler {
    const o = this.#options;
    return new Reassembler({
      timeoutMs: o.reassemblyTimeoutMs ?? DEFAULTS.reassemblyTimeoutMs,
      maxPending: o.maxPendingMessages ?? DEFAULTS.maxPendingMessages,
      maxPendingBytes: o.maxPendingBytes ?? DEFAULTS.maxPendingBytes,
      ...(onDrop === undefined ? {} : { onDrop }),
    });
  }

  /** @internal */
  get maxMessageBytes(): number {
    return this.#options.maxMessageBytes ?? DEFAULTS.maxMessageBytes;
  }

  /** @internal */
  get seenCacheSize(): number {
    return this.#options.seenCacheSize ?? DEFAULTS.seenCacheSize;
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
    if (chunkSize < 1024) {
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
    if (err.code === 'TRANSPORT_CHUNK') this.#chunkErrors++;
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
    return new TransportError('TRANSPORT_CONNECT', `${subject}: ${describe(err)}`, {
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

  private waitOutcome(p: PendingRequest, ms: number): Promise<Outcome | undefined> {
    if (p.outcome !== undefined) return Promise.resolve(p.outcome);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        p.wake = undefined;
        resolve(p.outcome);
      }, ms);
      p.wake = () => {
        clearTimeout(timer);
        p.wake = undefined;
        resolve(p.outcome);
      };
    });
  }

  private onInboxMessage(msg: Msg): void {
    const token = msg.subject.slice(this.#inboxBase.length + 1);
    const pending = this.#requests.get(token);
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      if (pending !== undefined && pending.outcome === undefined) {
        pending.outcome = { kind: 'noResponders' };
        pending.wake?.();
      }
      return;
    }
    let whole: Uint8Array | undefined;
    try {
      const frame = parseChunkFrame(
        msg.subject,
        (k) => msg.headers?.get(k) ?? '',
        msg.data,
        this.maxMessageBytes,
      );
      whole = this.#inboxReassembler.accept(msg.subject, frame);
    } catch (err) {
      this.report(this.translate(err, msg.subject));
      return;
    }
    if (whole === undefined || pending === undefined) return;
    const error = msg.headers?.get(FRAME_HEADERS.error) ?? '';
    pending.outcome = error === '' ? { kind: 'reply', data: whole } : { kind: 'remote', error };
    pending.wake?.();
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

/** A subscription of a {@link NatsTransport}: reassembly, de-duplication and replies. */
class NatsSubscription implements TransportSubscription {
  readonly subject: string;
  readonly closed: Promise<TransportError | undefined>;
  readonly #transport: NatsTransport;
  readonly #handler: MessageHandler;
  readonly #onError: ((err: TransportError) => void) | undefined;
  readonly #sub: Subscription;
  readonly #reassembler: Reassembler;
  readonly #seen: SeenCache;
  #resolveClosed!: (v: TransportError | undefined) => void;
  #ended = false;
  #error: TransportError | undefined;
  #delivered = 0;
  #duplicates = 0;
  #chunkErrors = 0;
  #expired = 0;

  constructor(transport: NatsTransport, subject: string, handler: MessageHandler, opts: SubscribeOptions) {
    this.subject = subject;
    this.#transport = transport;
    this.#handler = handler;
    this.#onError = opts.onError;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    this.#reassembler = transport.newReassembler(() => {
      this.#expired++;
    });
    this.#seen = new SeenCache(transport.seenCacheSize);
    this.#sub = transport.connection.subscribe(subject, {
      ...(opts.queue === undefined ? {} : { queue: opts.queue }),
      callback: (err, msg) => {
        if (err) this.end(transport.translate(err, subject));
        else this.onMessage(msg);
      },
    });
    void this.#sub.closed.then((v) => {
      this.end(v instanceof Error ? transport.translate(v, subject) : undefined);
    });
  }

  async ready(): Promise<void> {
    if (this.#error !== undefined) throw this.#error;
    await this.#transport.flush();
    await nextMacrotask();
    if (this.#error !== undefined) throw this.#error;
  }

  stats(): SubscriptionStats {
    return {
      delivered: this.#delivered,
      duplicates: this.#duplicates,
      chunkErrors: this.#chunkErrors,
      expired: this.#expired,
    };
  }

  async unsubscribe(): Promise<void> {
    this.end(undefined);
  }

  /** Ends the subscription once; `error` is what ended it (undefined: asked to). */
  end(error: TransportError | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    this.#reassembler.clear();
    if (!this.#sub.isClosed()) this.#sub.unsubscribe();
    if (error !== undefined) this.fail(error);
    this.#resolveClosed(error);
  }

  private fail(err: TransportError): void {
    if (err.code === 'TRANSPORT_CHUNK') this.#chunkErrors++;
    try {
      this.#onError?.(err);
    } catch {
      // ignore listener failures
    }
  }

  private onMessage(msg: Msg): void {
    let whole: Uint8Array | undefined;
    let id: string;
    try {
      const frame = parseChunkFrame(
        msg.subject,
        (k) => msg.headers?.get(k) ?? '',
        msg.data,
        this.#transport.maxMessageBytes,
      );
      id = frame.id;
      whole = this.#reassembler.accept(msg.subject, frame);
    } catch (err) {
      this.fail(this.#transport.translate(err, msg.subject));
      return;
    }
    if (whole === undefined) return;
    const reply = msg.reply ? msg.reply : undefined; // the client reports "no reply" as ''
    const seen = this.#seen.get(id);
    if (seen !== undefined) {
      this.#duplicates++;
      if (seen.state === 'done' && reply !== undefined) {
        void this.respond(reply, seen.reply, seen.error);
      }
      return;
    }
    this.#seen.set(id, { state: 'running' });
    this.#delivered++;
    const inbound: InboundMessage = {
      subject: msg.subject,
      data: whole,
      headers: readHeaders(msg.headers),
      messageId: id,
      expectsReply: reply !== undefined,
    };
    void this.run(inbound, reply);
  }

  private async run(inbound: InboundMessage, reply: string | undefined): Promise<void> {
    let out: Uint8Array = new Uint8Array(0);
    let error: string | undefined;
    try {
      const r = await this.#handler(inbound);
      if (r instanceof Uint8Array) out = r;
    } catch (err) {
      const code =
        typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : 'ERROR';
      error = `${code.replace(/\s/g, '_')} ${describe(err)
        .replace(/[\r\n]+/g, ' ')
        .slice(0, 512)}`;
      if (reply === undefined) {
        this.fail(
          new TransportError('TRANSPORT_REMOTE', `handler on ${inbound.subject} failed: ${describe(err)}`, {
            cause: err,
            details: { subject: inbound.subject, messageId: inbound.messageId },
          }),
        );
      }
    }
    this.#seen.set(
      inbound.messageId,
      error === undefined ? { state: 'done', reply: out } : { state: 'done', reply: out, error },
    );
    if (reply !== undefined && !this.#ended) await this.respond(reply, out, error);
  }

  private async respond(reply: string, data: Uint8Array, error: string | undefined): Promise<void> {
    try {
      await this.#transport.send(reply, data, nuid.next(), undefined, undefined, error);
    } catch (err) {
      this.fail(this.#transport.translate(err, reply));
    }
  }
}

/**
 * Connects to NATS and returns a {@link NatsTransport}. Throws `TRANSPORT_CONNECT` when no
 * server accepts the connection (unreachable, or credentials refused).
 */
export async function connectTransport(options: NatsTransportOptions): Promise<NatsTransport> {
  if (!Array.isArray(options.servers) || options.servers.length === 0) {
    throw new InvalidArgumentError('servers must be a non-empty array of NATS URLs', {
      details: { name: 'servers' },
    });
  }
  for (const [i, s] of options.servers.entries()) {
    if (typeof s !== 'string' || !/^(nats|tls|ws|wss):\/\/\S+$/.test(s)) {
      throw new InvalidArgumentError(`servers[${i}] must be a NATS URL, got ${JSON.stringify(String(s))}`, {
        details: { name: `servers[${i}]` },
      });
    }
  }
  if (typeof options.name !== 'string' || options.name.length === 0) {
    throw new InvalidArgumentError('name must be a non-empty string', { details: { name: 'name' } });
  }
  const inboxPrefix = options.inboxPrefix ?? '_INBOX';
  assertSubject('inboxPrefix', inboxPrefix, false);
  if (options.maxRetry !== undefined) assertInteger('maxRetry', options.maxRetry, 0, 100);
  if (options.timeoutMs !== undefined) assertInteger('timeoutMs', options.timeoutMs, 1, 600_000);
  if ((options.user === undefined) !== (options.pass === undefined)) {
    throw new InvalidArgumentError('user and pass must be given together', { details: { name: 'user' } });
  }
  const opts: NodeConnectionOptions = {
    servers: [...options.servers],
    name: options.name,
    inboxPrefix,
    timeout: options.timeoutMs ?? DEFAULTS.timeoutMs,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  };
  if (options.user !== undefined) {
    opts.user = options.user;
    opts.pass = options.pass;
  }
  if (options.credentials !== undefined) {
    let creds: Uint8Array;
    try {
      creds = readFileSync(options.credentials);
    } catch (err) {
      throw new InvalidArgumentError(`credentials: cannot read ${options.credentials}: ${describe(err)}`, {
        cause: err,
        details: { name: 'credentials', path: options.credentials },
      });
    }
    opts.authenticator = credsAuthenticator(creds);
  }
  let nc: NatsConnection;
  try {
    nc = await connect(opts);
  } catch (err) {
    throw new TransportError(
      'TRANSPORT_CONNECT',
      `cannot connect to ${options.servers.join(', ')} as ${options.name}: ${describe(err)}`,
      { cause: err, details: { servers: [...options.servers], name: options.name } },
    );
  }
  return new NatsTransport(nc, options, inboxPrefix);
}
