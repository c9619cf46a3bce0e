import type { Msg, MsgHdrs } from '@nats-io/transport-node';
import { checkChunkCrc, checkDeclaredSize, FrameFault, readChunkHeader } from './chunk-frame.ts';
import type { TransportDropReason } from './drop-reason.ts';
import { RateLimiter, type RateLimitOptions } from './rate-limiter.ts';
import { Reassembler } from './reassembler.ts';
import type { ResolvedLimits } from './transport-limits.ts';

/** Options of a {@link ChunkIntake}. */
export interface ChunkIntakeOptions {
  readonly limits: ResolvedLimits;
  /** An incomplete message is dropped this long after its first chunk. */
  readonly reassemblyTimeoutMs: number;
  /**
   * Per-sender token buckets, charged one token per chunk. Its `senderOf` (default: the subject)
   * also names whose share of the reassembly buffer a message is charged to, with or without a
   * rate limit.
   */
  readonly rateLimit?: RateLimitOptions;
  /** Every drop, with the fault when the input was corrupt or inconsistent. */
  readonly onDrop: (reason: TransportDropReason, subject: string, fault?: FrameFault) => void;
}

/** A whole message out of a {@link ChunkIntake}. */
export interface IntakeMessage {
  /** Sender-chosen id (not trusted). */
  readonly id: string;
  readonly data: Uint8Array;
  /** Headers of the message's first chunk (where application headers travel). */
  readonly headers: MsgHdrs | undefined;
}

/**
 * The checks every inbound chunk goes through, cheapest first: the sender's rate limit, framing
 * headers, declared length against the cap, CRC32, then reassembly within the sender's own share
 * of the buffer (see `Reassembler`: one sender's chunks never evict another's message in
 * progress). A chunk refused at one step costs nothing of the next; each refusal is reported once
 * through `onDrop`.
 */
export class ChunkIntake {
  readonly #limits: ResolvedLimits;
  readonly #onDrop: ChunkIntakeOptions['onDrop'];
  readonly #rate: RateLimiter | undefined;
  readonly #reassembler: Reassembler<MsgHdrs | undefined>;

  constructor(options: ChunkIntakeOptions) {
    this.#limits = options.limits;
    this.#onDrop = options.onDrop;
    this.#rate = options.rateLimit === undefined ? undefined : new RateLimiter(options.rateLimit);
    const senderOf = options.rateLimit?.senderOf;
    this.#reassembler = new Reassembler({
      timeoutMs: options.reassemblyTimeoutMs,
      maxPending: options.limits.maxPendingMessages,
      maxPendingBytes: options.limits.maxPendingBytes,
      maxPendingPerSender: options.limits.maxPendingMessagesPerSender,
      maxPendingBytesPerSender: options.limits.maxPendingBytesPerSender,
      ...(senderOf === undefined ? {} : { senderOf }),
      onDrop: (subject, _id, reason) => this.#onDrop(reason, subject),
    });
  }

  /** Bytes buffered for incomplete messages. */
  get pendingBytes(): number {
    return this.#reassembler.pendingBytes;
  }

  /** Incomplete messages buffered. */
  get pendingMessages(): number {
    return this.#reassembler.pendingCount;
  }

  /** Senders with an incomplete message buffered. */
  get pendingSenders(): number {
    return this.#reassembler.pendingSenders;
  }

  /** Takes one chunk; returns the whole message once complete, else `undefined`. */
  accept(msg: Msg): IntakeMessage | undefined {
    const subject = msg.subject;
    // The sender's bucket first: every chunk costs a token, junk included, so a flood of any kind
    // is dropped after one map lookup, before its headers are even read.
    if (this.#rate !== undefined && !this.#rate.take(subject)) {
      this.#onDrop('RATE_LIMITED', subject);
      return undefined;
    }
    const h = msg.headers;
    const header = readChunkHeader((k) => h?.get(k) ?? '', msg.data.length);
    if (header instanceof FrameFault) return this.#refuse(subject, header);
    const size = checkDeclaredSize(header, this.#limits.maxMessageBytes);
    if (size !== undefined) return this.#refuse(subject, size);
    const crc = checkChunkCrc(header, msg.data);
    if (crc !== undefined) return this.#refuse(subject, crc);
    const r = this.#reassembler.accept(subject, { ...header, data: msg.data }, h);
    switch (r.status) {
      case 'complete':
        return { id: header.id, data: r.data, headers: r.meta };
      case 'pending':
      case 'dropped': // counted through the reassembler's `onDrop`
        return undefined;
      case 'duplicate':
        this.#onDrop('DUPLICATE', subject);
        return undefined;
      case 'refused':
        return this.#refuse(subject, r.fault);
    }
  }

  /** Drops every incomplete message (no drop is reported). */
  clear(): void {
    this.#reassembler.clear();
  }

  #refuse(subject: string, fault: FrameFault): undefined {
    this.#onDrop(fault.reason, subject, fault);
    return undefined;
  }
}
