import { assertInteger } from '../errors/index.ts';
import { FRAME_HEADER_BYTES, MAX_FRAME_BODY_BYTES } from '../protocol/wire-frame.ts';
import { assertRateLimit, type RateLimitOptions } from './rate-limiter.ts';

/**
 * Default limits of a transport. A message is at most one wire frame (64 MiB body + 12-byte
 * header), so that is the default cap of a whole message; a subscription buffers about two such
 * messages' worth of incomplete chunks (128 MiB).
 */
export const TRANSPORT_DEFAULTS = Object.freeze({
  maxRetry: 5,
  timeoutMs: 3000,
  reassemblyTimeoutMs: 30_000,
  maxMessageBytes: MAX_FRAME_BODY_BYTES + FRAME_HEADER_BYTES,
  maxPendingMessages: 64,
  maxPendingBytes: 128 * 1024 * 1024,
  seenCacheSize: 4096,
});

/** Largest value accepted for a byte limit (2^40). */
const MAX_LIMIT_BYTES = 2 ** 40;

/** The reception limits that a transport sets and a subscription may override. */
export interface ReceiveLimits {
  /** Largest declared `Cohort-Length` accepted; a larger message is refused on its first chunk. */
  readonly maxMessageBytes?: number;
  /** Incomplete messages buffered at once. */
  readonly maxPendingMessages?: number;
  /** Bytes buffered for incomplete messages. */
  readonly maxPendingBytes?: number;
}

/** Limits of one receiver with every default applied. */
export interface ResolvedLimits {
  readonly maxMessageBytes: number;
  readonly maxPendingMessages: number;
  readonly maxPendingBytes: number;
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
  if (o.reassemblyTimeoutMs !== undefined) {
    assertInteger(`${prefix}reassemblyTimeoutMs`, o.reassemblyTimeoutMs, 1, 3_600_000);
  }
  if (o.seenCacheSize !== undefined) assertInteger(`${prefix}seenCacheSize`, o.seenCacheSize, 0, 10_000_000);
  assertRateLimit(`${prefix}rateLimit`, o.rateLimit);
}

/** `own` over `base` over {@link TRANSPORT_DEFAULTS}. */
export function resolveLimits(base: ReceiveLimits, own: ReceiveLimits = {}): ResolvedLimits {
  return {
    maxMessageBytes: own.maxMessageBytes ?? base.maxMessageBytes ?? TRANSPORT_DEFAULTS.maxMessageBytes,
    maxPendingMessages:
      own.maxPendingMessages ?? base.maxPendingMessages ?? TRANSPORT_DEFAULTS.maxPendingMessages,
    maxPendingBytes: own.maxPendingBytes ?? base.maxPendingBytes ?? TRANSPORT_DEFAULTS.maxPendingBytes,
  };
}
