/**
 * Stable reason codes of a chunk or message the transport dropped before (or instead of) running
 * a handler. Each is also the label of the `dropped` counters, so a code is never renamed once
 * released.
 */
export const TRANSPORT_DROP_REASONS = Object.freeze([
  /** A framing header (`Cohort-Id`, `Cohort-Chunk`, `Cohort-Length`, `Cohort-Crc`) is missing or malformed, or the declared chunk count cannot fit the declared length. */
  'FRAME_MALFORMED',
  /** The chunk's bytes do not match its `Cohort-Crc`. */
  'CRC_MISMATCH',
  /** The chunk disagrees with its message: other count or length than its siblings, a chunk size that does not fit the count, or a total length other than declared. */
  'CHUNK_MISMATCH',
  /** The declared `Cohort-Length` exceeds the subscription's `maxMessageBytes`: refused before its CRC is checked or anything is buffered. */
  'OVERSIZE',
  /** An incomplete chunked message expired (`reassemblyTimeoutMs` after its first chunk). */
  'REASSEMBLY_TIMEOUT',
  /**
   * An incomplete chunked message was dropped to keep the subscription's pending count or bytes
   * within its bound: always one of the sender's own (its oldest other one, else the message the
   * chunk belongs to), never another sender's message in progress.
   */
  'REASSEMBLY_MEMORY',
  /** The sender's token bucket was empty (`SubscribeOptions.rateLimit`). */
  'RATE_LIMITED',
  /** A message already handled (or being handled) with the same subject, id and bytes, or a chunk already buffered: answered from the reply cache or ignored. */
  'DUPLICATE',
  /** A reply arrived on the reply inbox for no pending request (late, or not ours). */
  'UNSOLICITED',
  /**
   * A request whose reply subject is not under the requester's own inbox (a JetStream API call, a
   * service subject, another member's inbox): refused on its first chunk, before any handler, and
   * never answered (see `ReplyPolicy`).
   */
  'REPLY_REFUSED',
  /**
   * An incomplete chunked message was dropped because its sender held more than its own share of
   * the subscription's reassembly buffer (`maxPendingMessagesPerSender`, `maxPendingBytesPerSender`):
   * the sender's oldest other message, else the one the chunk belongs to. One sender's chunks
   * evict only its own messages.
   */
  'REASSEMBLY_SENDER_SHARE',
] as const);

/** One of {@link TRANSPORT_DROP_REASONS}. */
export type TransportDropReason = (typeof TRANSPORT_DROP_REASONS)[number];

/** Counts of drops by reason; every reason is present (0 when none). */
export type TransportDropCounts = Readonly<Record<TransportDropReason, number>>;

/** Mutable per-reason drop counters (one per subscription, one per transport). */
export class DropCounter {
  readonly #counts: Record<TransportDropReason, number> = zeroCounts();

  /** Counts one drop of `reason`. */
  add(reason: TransportDropReason): void {
    this.#counts[reason]++;
  }

  /** Sum of the drops of the given reasons. */
  sum(reasons: readonly TransportDropReason[]): number {
    let n = 0;
    for (const r of reasons) n += this.#counts[r];
    return n;
  }

  /** A frozen copy of the counters. */
  snapshot(): TransportDropCounts {
    return Object.freeze({ ...this.#counts });
  }
}

function zeroCounts(): Record<TransportDropReason, number> {
  const out = {} as Record<TransportDropReason, number>;
  for (const r of TRANSPORT_DROP_REASONS) out[r] = 0;
  return out;
}

/** Reasons reported as `TRANSPORT_CHUNK` errors (corrupt or inconsistent input) and counted in `chunkErrors`. */
export const CHUNK_ERROR_REASONS: readonly TransportDropReason[] = Object.freeze([
  'FRAME_MALFORMED',
  'CRC_MISMATCH',
  'CHUNK_MISMATCH',
  'OVERSIZE',
]);
