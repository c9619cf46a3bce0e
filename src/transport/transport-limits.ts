import { assertInteger } from '../errors/index.ts';
import { FRAME_HEADER_BYTES, MAX_FRAME_BODY_BYTES } from '../protocol/wire-frame.ts';
import { MIN_CHUNK_BYTES } from './chunk-frame.ts';
import { assertRateLimit, type RateLimitOptions } from './rate-limiter.ts';
import { PART_OVERHEAD_BYTES } from './reassembler.ts';

/**
 * Default limits of a transport. A message is at most one wire frame (64 MiB body + 12-byte
 * header), so that is the default cap of a whole message; a subscription buffers about two such
 * messages' worth of incomplete chunks (128 MiB), and each sender at most its own share of that
 * (see {@link resolveLimits}).
 */
export const TRANSPORT_DEFAULTS = Object.freeze({
  maxRetry: 5,
  timeoutMs: 3000,
  reassemblyTimeoutMs: 30_000,
  maxMessageBytes: MAX_FRAME_BODY_BYTES + FRAME_HEADER_BYTES,
  maxPendingMessages: 64,
  maxPendingBytes: 128 * 1024 * 1024,
  /** Incomplete messages one sender may have buffered at once (an honest sender has one or two). */
  maxPendingMessagesPerSender: 8,
  /** A sender's default byte share is at least this fraction (1/n) of the subscription's bound. */
  pendingBytesShareDivisor: 8,
  seenCacheSize: 4096,
});

/** Largest value accepted for a byte limit (2^40). */
const MAX_LIMIT_BYTES = 2 ** 40;

/** The reception limits that a transport sets and a subscription may override. */
export interface ReceiveLimits {
  /** Largest declared `Cohort-Length` accepted; a larger message is refused on its first chunk. */
  readonly maxMessageBytes?: number;
  /** Incomplete messages buffered at once, all senders together. */
  readonly maxPendingMessages?: number;
  /** Bytes buffered for incomplete messages, all senders together. */
  readonly maxPendingBytes?: number;
  /**
   * Incomplete messages one sender (`RateLimitOptions.senderOf`, default the subject) may have
   * buffered at once; beyond, its own oldest is dropped (`REASSEMBLY_SENDER_SHARE`). Default:
   * {@link TRANSPORT_DEFAULTS}`.maxPendingMessagesPerSender`, at most `maxPendingMessages`.
   */
  readonly maxPendingMessagesPerSender?: number;
  /**
   * Bytes one sender may have buffered for incomplete messages; beyond, its own oldest message is
   * dropped (`REASSEMBLY_SENDER_SHARE`). Default: an eighth of `maxPendingBytes`, but at least
   * what one whole message of `maxMessageBytes` is charged ({@link pendingChargeBound}), and at
   * most `maxPendingBytes`.
   */
  readonly maxPendingBytesPerSender?: number;
}

/** Limits of one receiver with every default applied. */
export interface ResolvedLimits {
  readonly maxMessageBytes: number;
  readonly maxPendingMessages: number;
  readonly maxPendingBytes: number;
  readonly maxPendingMessagesPerSender: number;
  readonly maxPendingBytesPerSender: number;
}

/**
 * The most a reassembler charges for one whole message of `bytes` sent by an honest sender: its
 * bytes plus the per-part overhead of every chunk, chunks being at least `MIN_CHUNK_BYTES` (all
 * but the last).
 */
export function pendingChargeBound(bytes: number): number {
  assertInteger('bytes', bytes, 0, MAX_LIMIT_BYTES);
  return bytes + PART_OVERHEAD_BYTES * Math.max(1, Math.ceil(bytes / MIN_CHUNK_BYTES));
}

/**
 * Throws `INVALID_ARGUMENT` naming `prefix` + the field unless every limit given is an integer in
 * range (and `rateLimit`, when given, is well-formed).
 */
export function assertReceiveLimits(
  prefix: string,
  o: ReceiveLimits & {
    readonly reassemblyTimeoutMs?: number;
    readonly seenCacheSize?: number;
    readonly rateLimit?: RateLimitOptions;
  },
): void {
  if (o.maxMessageBytes !== undefined) {
    assertInteger(`${prefix}maxMessageBytes`, o.maxMessageBytes, 0, MAX_LIMIT_BYTES);
  }
  if (o.maxPendingBytes !== undefined) {
    assertInteger(`${prefix}maxPendingBytes`, o.maxPendingBytes, 0, MAX_LIMIT_BYTES);
  }
  if (o.maxPendingMessages !== undefined) {
    assertInteger(`${prefix}maxPendingMessages`, o.maxPendingMessages, 0, 1_000_000);
  }
  if (o.maxPendingBytesPerSender !== undefined) {
    assertInteger(`${prefix}maxPendingBytesPerSender`, o.maxPendingBytesPerSender, 0, MAX_LIMIT_BYTES);
  }
  if (o.maxPendingMessagesPerSender !== undefined) {
    assertInteger(`${prefix}maxPendingMessagesPerSender`, o.maxPendingMessagesPerSender, 0, 1_000_000);
  }
  if (o.reassemblyTimeoutMs !== undefined) {
    assertInteger(`${prefix}reassemblyTimeoutMs`, o.reassemblyTimeoutMs, 1, 3_600_000);
  }
  if (o.seenCacheSize !== undefined) assertInteger(`${prefix}seenCacheSize`, o.seenCacheSize, 0, 10_000_000);
  assertRateLimit(`${prefix}rateLimit`, o.rateLimit);
}

/**
 * `own` over `base` over {@link TRANSPORT_DEFAULTS}. A sender's share defaults from the resolved
 * subscription bounds (see {@link ReceiveLimits}) and never exceeds them.
 */
export function resolveLimits(base: ReceiveLimits, own: ReceiveLimits = {}): ResolvedLimits {
  const d = TRANSPORT_DEFAULTS;
  const maxMessageBytes = own.maxMessageBytes ?? base.maxMessageBytes ?? d.maxMessageBytes;
  const maxPendingMessages = own.maxPendingMessages ?? base.maxPendingMessages ?? d.maxPendingMessages;
  const maxPendingBytes = own.maxPendingBytes ?? base.maxPendingBytes ?? d.maxPendingBytes;
  const messagesPerSender =
    own.maxPendingMessagesPerSender ?? base.maxPendingMessagesPerSender ?? d.maxPendingMessagesPerSender;
  const bytesPerSender =
    own.maxPendingBytesPerSender ??
    base.maxPendingBytesPerSender ??
    Math.max(Math.ceil(maxPendingBytes / d.pendingBytesShareDivisor), pendingChargeBound(maxMessageBytes));
  return {
    maxMessageBytes,
    maxPendingMessages,
    maxPendingBytes,
    maxPendingMessagesPerSender: Math.min(messagesPerSender, maxPendingMessages),
    maxPendingBytesPerSender: Math.min(bytesPerSender, maxPendingBytes),
  };
}
