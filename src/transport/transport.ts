import type { TransportDropCounts, TransportDropReason } from './drop-reason.ts';
import type { RateLimitOptions } from './rate-limiter.ts';
import type { TransportError } from './transport-error.ts';

/** Application headers of a message: names must not start with `Cohort-` (reserved for framing). */
export type MessageHeaders = Readonly<Record<string, string>>;

/** A whole (reassembled, CRC-checked) message handed to a subscription handler. */
export interface InboundMessage {
  /** The subject it was published to. */
  readonly subject: string;
  /** The payload, byte-exact as published (however many chunks it travelled in). */
  readonly data: Uint8Array;
  /** Application headers as published. */
  readonly headers: MessageHeaders;
  /**
   * Sender-chosen id, the same on every retry of one request. Not trusted: any sender may pick
   * any id, so the transport de-duplicates by subject + id + SHA-256 of the bytes, never by id
   * alone, and a handler must not treat it as proof of anything.
   */
  readonly messageId: string;
  /** Whether the sender waits for a reply (a `request`). */
  readonly expectsReply: boolean;
}

/**
 * Handles one message. For a request, the returned bytes are the reply (an empty reply when
 * nothing is returned); a thrown error travels back as `TRANSPORT_REMOTE`.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: lets `async () => {}` handlers type-check (an empty ack).
export type MessageHandler = (msg: InboundMessage) => Promise<Uint8Array | undefined | void>;

/** Options of {@link Transport.request}; both default to the transport's configuration. */
export interface RequestOptions {
  /** Time to wait for the reply of one attempt, in milliseconds. */
  readonly timeoutMs?: number;
  /** Attempts after the first one, on timeout or no responders (same message id each time). */
  readonly maxRetry?: number;
  /** Application headers. */
  readonly headers?: MessageHeaders;
}

/** Options of {@link Transport.subscribe}. */
export interface SubscribeOptions {
  /**
   * Queue group: each message goes to one member. Only messages that fit in one chunk can be
   * load-balanced this way (chunks of one message could land on different members).
   */
  readonly queue?: string;
  /** Called for errors no caller can see: corrupt chunks, a handler throwing on a publish. */
  readonly onError?: (err: TransportError) => void;
  /**
   * Called once for every chunk or message this subscription drops, with the reason and the
   * subject it came on (feed rejection counters with it). A throwing listener is ignored.
   */
  readonly onDrop?: (reason: TransportDropReason, subject: string) => void;
  /**
   * Largest declared message length accepted (bytes); a larger message is dropped as `OVERSIZE`
   * on its first chunk, before its CRC is checked or anything is buffered. Default: the
   * transport's `maxMessageBytes` (64 MiB + 12 bytes). A heartbeat subscription can take a few KiB.
   */
  readonly maxMessageBytes?: number;
  /** Incomplete messages buffered at once; default: the transport's `maxPendingMessages` (64). */
  readonly maxPendingMessages?: number;
  /** Bytes buffered for incomplete messages; default: the transport's `maxPendingBytes` (128 MiB). */
  readonly maxPendingBytes?: number;
  /**
   * Per-sender token bucket, charged one token per chunk before anything else (junk included),
   * so a flood costs one lookup per chunk; a chunk finding the bucket empty is dropped as `RATE_LIMITED`. At most 4096
   * senders are tracked (least recently used forgotten). Default: no limit.
   */
  readonly rateLimit?: RateLimitOptions;
}

/** Counters of one subscription. */
export interface SubscriptionStats {
  /** Whole messages handed to the handler. */
  readonly delivered: number;
  /**
   * Whole messages seen again with the same subject, id and bytes (request retries), answered
   * from the reply cache or dropped while the first is still running.
   */
  readonly duplicates: number;
  /** Chunks refused as corrupt or inconsistent (`FRAME_MALFORMED`, `CRC_MISMATCH`, `CHUNK_MISMATCH`, `OVERSIZE`), each also reported as `TRANSPORT_CHUNK`. */
  readonly chunkErrors: number;
  /** Incomplete messages dropped after the reassembly timeout or to bound memory. */
  readonly expired: number;
  /** Every drop by reason (`duplicates` plus duplicate chunks are under `DUPLICATE`). */
  readonly dropped: TransportDropCounts;
  /** Incomplete messages buffered now. */
  readonly pendingMessages: number;
  /** Bytes buffered now for incomplete messages (payload plus 128 per chunk). */
  readonly pendingBytes: number;
}

/** A live subscription. */
export interface TransportSubscription {
  readonly subject: string;
  /**
   * Resolves once the server has processed the subscription; rejects with
   * `TRANSPORT_PERMISSION` when the server refused it.
   */
  ready(): Promise<void>;
  /** Resolves when the subscription ends: `undefined` after `unsubscribe`, else the error that ended it. */
  readonly closed: Promise<TransportError | undefined>;
  stats(): SubscriptionStats;
  unsubscribe(): Promise<void>;
}

/**
 * Message transport between Cohort processes: publish, acknowledged request with bounded
 * retries, and subscriptions whose handlers' results are the acknowledgements.
 */
export interface Transport {
  /**
   * Publishes `data` (chunked when larger than the server allows). Resolves once the server
   * has processed it; rejects with `TRANSPORT_PERMISSION` when it was refused.
   */
  publish(subject: string, data: Uint8Array, headers?: MessageHeaders): Promise<void>;
  /** Sends `data` and resolves with the reply; retries on timeout and no responders. */
  request(subject: string, data: Uint8Array, opts?: RequestOptions): Promise<Uint8Array>;
  subscribe(subject: string, handler: MessageHandler, opts?: SubscribeOptions): TransportSubscription;
  /** Round trip to the server: everything sent before has been processed by it. */
  flush(): Promise<void>;
  /** Ends every subscription and pending request (`TRANSPORT_CLOSED`) and closes the connection. */
  close(): Promise<void>;
}
