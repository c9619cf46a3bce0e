import { setImmediate as nextMacrotask } from 'node:timers/promises';
import type { Msg, Subscription } from '@nats-io/transport-node';
import type { FrameFault } from './chunk-frame.ts';
import { ChunkIntake } from './chunk-intake.ts';
import { CHUNK_ERROR_REASONS, DropCounter, type TransportDropReason } from './drop-reason.ts';
import { readHeaders } from './message-headers.ts';
import type { NatsTransport } from './nats-transport.ts';
import { randomId } from './random-id.ts';
import { SeenCache, seenKey } from './seen-cache.ts';
import type {
  InboundMessage,
  MessageHandler,
  SubscribeOptions,
  SubscriptionStats,
  TransportSubscription,
} from './transport.ts';
import { errorMessage, TransportError } from './transport-error.ts';
import { resolveLimits } from './transport-limits.ts';

const EXPIRY_REASONS: readonly TransportDropReason[] = [
  'REASSEMBLY_TIMEOUT',
  'REASSEMBLY_MEMORY',
  'REASSEMBLY_SENDER_SHARE',
];

/**
 * A subscription of a {@link NatsTransport}: the chunk checks (see `ChunkIntake`), reassembly,
 * de-duplication by subject + id + SHA-256 of the bytes, and replies.
 */
export class NatsSubscription implements TransportSubscription {
  readonly subject: string;
  readonly closed: Promise<TransportError | undefined>;
  readonly #transport: NatsTransport;
  readonly #handler: MessageHandler;
  readonly #onError: SubscribeOptions['onError'];
  readonly #onDrop: SubscribeOptions['onDrop'];
  readonly #sub: Subscription;
  readonly #intake: ChunkIntake;
  readonly #seen: SeenCache;
  readonly #dropped = new DropCounter();
  #resolveClosed!: (v: TransportError | undefined) => void;
  #ended = false;
  #error: TransportError | undefined;
  #delivered = 0;
  #duplicates = 0;

  /** Use `NatsTransport.subscribe` (arguments validated there). */
  constructor(transport: NatsTransport, subject: string, handler: MessageHandler, opts: SubscribeOptions) {
    this.subject = subject;
    this.#transport = transport;
    this.#handler = handler;
    this.#onError = opts.onError;
    this.#onDrop = opts.onDrop;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    const defaults = transport.receiveDefaults;
    this.#intake = new ChunkIntake({
      limits: resolveLimits(defaults.limits, opts),
      reassemblyTimeoutMs: defaults.reassemblyTimeoutMs,
      ...(opts.rateLimit === undefined ? {} : { rateLimit: opts.rateLimit }),
      onDrop: (reason, s, fault) => this.#drop(reason, s, fault),
    });
    this.#seen = new SeenCache(defaults.seenCacheSize);
    this.#sub = transport.connection.subscribe(subject, {
      ...(opts.queue === undefined ? {} : { queue: opts.queue }),
      callback: (err, msg) => {
        if (err) this.end(transport.translate(err, subject));
        else this.#onMessage(msg);
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
      chunkErrors: this.#dropped.sum(CHUNK_ERROR_REASONS),
      expired: this.#dropped.sum(EXPIRY_REASONS),
      dropped: this.#dropped.snapshot(),
      pendingMessages: this.#intake.pendingMessages,
      pendingBytes: this.#intake.pendingBytes,
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
    this.#intake.clear();
    if (!this.#sub.isClosed()) this.#sub.unsubscribe();
    if (error !== undefined) this.#fail(error);
    this.#resolveClosed(error);
  }

  #fail(err: TransportError): void {
    try {
      this.#onError?.(err);
    } catch {
      // ignore listener failures
    }
  }

  #drop(reason: TransportDropReason, subject: string, fault?: FrameFault): void {
    this.#dropped.add(reason);
    this.#transport.countDrop(reason);
    // Corrupt input is also an error for `onError` (built only when someone listens).
    if (fault !== undefined && this.#onError !== undefined) this.#fail(fault.toError(subject));
    try {
      this.#onDrop?.(reason, subject);
    } catch {
      // ignore listener failures
    }
  }

  #onMessage(msg: Msg): void {
    if (this.#ended) return;
    const reply = msg.reply ? msg.reply : undefined; // the client reports "no reply" as ''
    // Before anything else: a reply subject the requester does not own would make this member
    // publish its answer there (a JetStream API call, the log subject) with its response rights.
    if (reply !== undefined && !this.#transport.replyAllowed(msg.subject, reply)) {
      this.#drop('REPLY_REFUSED', msg.subject);
      return;
    }
    const whole = this.#intake.accept(msg);
    if (whole === undefined) return;
    const headers = readHeaders(whole.headers);
    // Only requests are retried (same id and bytes): a publish is handled without hashing it for
    // the reply cache, so a flood of junk publishes costs no SHA-256 of each message.
    const key = reply === undefined ? undefined : seenKey(msg.subject, whole.id, whole.data, headers);
    const seen = key === undefined ? undefined : this.#seen.get(key);
    if (seen !== undefined) {
      // The same sender's subject, id and bytes: a retry. Answer it from the cache (when done).
      this.#duplicates++;
      this.#drop('DUPLICATE', msg.subject);
      if (seen.state === 'done' && reply !== undefined) void this.#respond(reply, seen.reply, seen.error);
      return;
    }
    if (key !== undefined) this.#seen.set(key, { state: 'running' });
    this.#delivered++;
    const inbound: InboundMessage = {
      subject: msg.subject,
      data: whole.data,
      headers,
      messageId: whole.id,
      expectsReply: reply !== undefined,
    };
    void this.#run(inbound, key, reply);
  }

  async #run(inbound: InboundMessage, key: string | undefined, reply: string | undefined): Promise<void> {
    let out: Uint8Array = new Uint8Array(0);
    let error: string | undefined;
    try {
      const r = await this.#handler(inbound);
      if (r instanceof Uint8Array) out = r;
    } catch (err) {
      const code =
        typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : 'ERROR';
      error = `${code.replace(/\s/g, '_')} ${errorMessage(err)
        .replace(/[\r\n]+/g, ' ')
        .slice(0, 512)}`;
      if (reply === undefined) {
        this.#fail(
          new TransportError(
            'TRANSPORT_REMOTE',
            `handler on ${inbound.subject} failed: ${errorMessage(err)}`,
            {
              cause: err,
              details: { subject: inbound.subject, messageId: inbound.messageId },
            },
          ),
        );
      }
    }
    if (key !== undefined) {
      this.#seen.set(
        key,
        error === undefined ? { state: 'done', reply: out } : { state: 'done', reply: out, error },
      );
    }
    if (reply !== undefined && !this.#ended) await this.#respond(reply, out, error);
  }

  async #respond(reply: string, data: Uint8Array, error: string | undefined): Promise<void> {
    try {
      await this.#transport.send(reply, data, randomId(), undefined, undefined, error);
    } catch (err) {
      this.#fail(this.#transport.translate(err, reply));
    }
  }
}
