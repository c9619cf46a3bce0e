import { type ChunkFrame, FrameFault } from './chunk-frame.ts';
import { senderKey } from './rate-limiter.ts';

/**
 * Why a {@link Reassembler} gave up on an incomplete message: it expired, the subscription's
 * bound was reached (`REASSEMBLY_MEMORY`), or its sender held more than its share
 * (`REASSEMBLY_SENDER_SHARE`). The last two only ever drop the arriving chunk's sender's messages.
 */
export type ReassemblyDropReason = 'REASSEMBLY_TIMEOUT' | ReassemblyBoundReason;

/** Why a {@link Reassembler} dropped an incomplete message to stay within its bounds. */
export type ReassemblyBoundReason = 'REASSEMBLY_MEMORY' | 'REASSEMBLY_SENDER_SHARE';

/** Limits of a {@link Reassembler}. */
export interface ReassemblerOptions {
  /** An incomplete message is dropped this long after its first chunk arrived. */
  readonly timeoutMs: number;
  /** At most this many incomplete messages at once, all senders together. */
  readonly maxPending: number;
  /**
   * At most this many bytes buffered for incomplete messages, all senders together (chunk bytes
   * plus {@link PART_OVERHEAD_BYTES} per chunk).
   */
  readonly maxPendingBytes: number;
  /** At most this many incomplete messages of one sender; default: no share below `maxPending`. */
  readonly maxPendingPerSender?: number;
  /** At most this many bytes buffered for one sender's incomplete messages; default: no share below `maxPendingBytes`. */
  readonly maxPendingBytesPerSender?: number;
  /** The sender a subject belongs to (as `RateLimitOptions.senderOf`); default the subject itself. */
  readonly senderOf?: (subject: string) => string;
  /** Called for each incomplete message dropped (timeout or a bound). */
  readonly onDrop?: (subject: string, id: string, reason: ReassemblyDropReason) => void;
}

/** What {@link Reassembler.accept} did with a chunk. */
export type ReassemblyResult<M = undefined> =
  /** The last chunk came in: the whole message, byte-exact, with the `meta` given with chunk 0. */
  | { readonly status: 'complete'; readonly data: Uint8Array; readonly meta: M | undefined }
  /** Buffered; more chunks are awaited. */
  | { readonly status: 'pending' }
  /**
   * The chunk's own message was dropped to keep its sender's share or the buffer within bounds
   * (already reported through `onDrop`, with `reason`).
   */
  | { readonly status: 'dropped'; readonly reason: ReassemblyBoundReason }
  /** This chunk of this message is already buffered (a retry): ignored. */
  | { readonly status: 'duplicate' }
  /** The chunk disagrees with its message (`CHUNK_MISMATCH`); the partial message is dropped. */
  | { readonly status: 'refused'; readonly fault: FrameFault };

/** Bytes charged per buffered chunk on top of its payload, for the bookkeeping of each part. */
export const PART_OVERHEAD_BYTES = 128;

interface Pending<M> {
  readonly subject: string;
  /** Whose share it is charged to. */
  readonly sender: string;
  readonly id: string;
  readonly count: number;
  readonly length: number;
  /** Size of every chunk but the last, once a non-last chunk was seen. */
  chunkSize: number | undefined;
  readonly parts: Map<number, Uint8Array>;
  /** What the caller passed with chunk 0. */
  meta: M | undefined;
  /** Payload bytes received. */
  bytes: number;
  /** Bytes charged against `maxPendingBytes`. */
  charged: number;
  readonly timer: NodeJS.Timeout;
}

/** One sender's incomplete messages (keys, oldest first) and the bytes they are charged. */
interface SenderShare {
  readonly keys: Set<string>;
  charged: number;
}

const PENDING = Object.freeze({ status: 'pending' } as const);
const DUPLICATE = Object.freeze({ status: 'duplicate' } as const);

/**
 * Puts chunked messages back together, with bounded memory shared fairly among senders. Pending
 * messages are keyed by subject and sender-chosen id, so one sender cannot disturb another's
 * reassembly; parts are kept in a map (nothing is allocated from a declared count); every non-last
 * chunk must have the size that the declared count implies. Incomplete messages expire after
 * `timeoutMs`. Each sender (`senderOf`) has its own share (`maxPendingPerSender`,
 * `maxPendingBytesPerSender`) within the bounds of all (`maxPending`, `maxPendingBytes`): a chunk
 * that takes its sender over its share, or the buffer over its bounds, drops that sender's own
 * oldest incomplete message, else the message the chunk belongs to; never another sender's. `M`
 * is what the caller keeps of chunk 0 (e.g. its headers) until the message is complete.
 */
export class Reassembler<M = undefined> {
  readonly #options: ReassemblerOptions;
  readonly #maxPerSender: number;
  readonly #maxBytesPerSender: number;
  readonly #pending = new Map<string, Pending<M>>();
  readonly #senders = new Map<string, SenderShare>();
  #charged = 0;

  constructor(options: ReassemblerOptions) {
    this.#options = options;
    this.#maxPerSender = options.maxPendingPerSender ?? Number.POSITIVE_INFINITY;
    this.#maxBytesPerSender = options.maxPendingBytesPerSender ?? Number.POSITIVE_INFINITY;
  }

  /** Bytes currently charged for incomplete messages (payload plus per-chunk overhead). */
  get pendingBytes(): number {
    return this.#charged;
  }

  /** Incomplete messages currently buffered. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Senders with an incomplete message buffered now. */
  get pendingSenders(): number {
    return this.#senders.size;
  }

  /** What `sender`'s incomplete messages hold now: how many, and the bytes charged for them. */
  shareOf(sender: string): { readonly messages: number; readonly bytes: number } {
    const share = this.#senders.get(sender);
    return { messages: share?.keys.size ?? 0, bytes: share?.charged ?? 0 };
  }

  /**
   * Takes one chunk whose headers, size and CRC were checked (see `chunk-frame.ts`); `frame.data`
   * is copied when buffered. `meta` is kept when given with chunk 0 and returned with the whole
   * message.
   */
  accept(subject: string, frame: ChunkFrame, meta?: M): ReassemblyResult<M> {
    if (frame.count === 1) {
      if (frame.data.length !== frame.length) return this.#mismatch(undefined, frame, 'length');
      return { status: 'complete', data: frame.data, meta };
    }
    const key = `${subject} ${frame.id}`;
    let p = this.#pending.get(key);
    if (p === undefined) {
      const sender = senderKey(this.#options.senderOf, subject);
      p = {
        subject,
        sender,
        id: frame.id,
        count: frame.count,
        length: frame.length,
        chunkSize: undefined,
        parts: new Map(),
        meta: undefined,
        bytes: 0,
        charged: 0,
        timer: setTimeout(() => this.#drop(key, 'REASSEMBLY_TIMEOUT'), this.#options.timeoutMs).unref(),
      };
      this.#pending.set(key, p);
      let share = this.#senders.get(sender);
      if (share === undefined) {
        share = { keys: new Set(), charged: 0 };
        this.#senders.set(sender, share);
      }
      share.keys.add(key);
    } else if (p.count !== frame.count || p.length !== frame.length) {
      return this.#mismatch(key, frame, 'count or length');
    }
    if (p.parts.has(frame.index)) return DUPLICATE;
    const last = frame.index === frame.count - 1;
    if (!last) {
      if (p.chunkSize === undefined) {
        if (frame.data.length === 0 || Math.ceil(p.length / frame.data.length) !== p.count) {
          return this.#mismatch(key, frame, 'chunk size');
        }
        p.chunkSize = frame.data.length;
      } else if (frame.data.length !== p.chunkSize) {
        return this.#mismatch(key, frame, 'chunk size');
      }
    } else if (frame.data.length === 0) {
      return this.#mismatch(key, frame, 'empty last chunk');
    }
    const part = frame.data.slice(); // a copy: a view would pin the client's whole read buffer
    p.parts.set(frame.index, part);
    if (frame.index === 0) p.meta = meta;
    p.bytes += part.length;
    const charge = part.length + PART_OVERHEAD_BYTES;
    p.charged += charge;
    this.#charged += charge;
    this.#senders.get(p.sender)!.charged += charge;
    if (p.bytes > p.length) return this.#mismatch(key, frame, 'length');
    if (p.parts.size === p.count) {
      this.#discard(key);
      if (p.bytes !== p.length) return this.#mismatch(undefined, frame, 'length');
      const out = new Uint8Array(p.length);
      let off = 0;
      for (let i = 0; i < p.count; i++) {
        const chunk = p.parts.get(i)!;
        out.set(chunk, off);
        off += chunk.length;
      }
      return { status: 'complete', data: out, meta: p.meta };
    }
    const dropped = this.#enforceBounds(key, p.sender);
    return dropped === undefined ? PENDING : { status: 'dropped', reason: dropped };
  }

  /** Drops every incomplete message and stops their timers (no `onDrop`). */
  clear(): void {
    for (const key of [...this.#pending.keys()]) this.#discard(key);
  }

  /**
   * Brings the whole buffer, then `sender`'s share, back within bounds by dropping the sender's own
   * incomplete messages, oldest first, `keep` (the one the chunk belongs to) last: another
   * sender's message is never dropped. Returns the reason when `keep` itself was dropped.
   */
  #enforceBounds(keep: string, sender: string): ReassemblyBoundReason | undefined {
    const o = this.#options;
    const share = this.#senders.get(sender)!;
    // The bounds of all first: a sender over both (a share as large as the bounds) is dropped for memory.
    const bounds: [ReassemblyBoundReason, () => boolean][] = [
      ['REASSEMBLY_MEMORY', () => this.#pending.size > o.maxPending || this.#charged > o.maxPendingBytes],
      [
        'REASSEMBLY_SENDER_SHARE',
        () => share.keys.size > this.#maxPerSender || share.charged > this.#maxBytesPerSender,
      ],
    ];
    for (const [reason, over] of bounds) {
      while (over()) {
        let victim = keep;
        for (const k of share.keys) {
          if (k !== keep) {
            victim = k;
            break;
          }
        }
        this.#drop(victim, reason);
        if (victim === keep) return reason;
      }
    }
    return undefined;
  }

  #drop(key: string, reason: ReassemblyDropReason): void {
    const p = this.#discard(key);
    if (p !== undefined) this.#options.onDrop?.(p.subject, p.id, reason);
  }

  #discard(key: string): Pending<M> | undefined {
    const p = this.#pending.get(key);
    if (p === undefined) return undefined;
    clearTimeout(p.timer);
    this.#charged -= p.charged;
    this.#pending.delete(key);
    const share = this.#senders.get(p.sender);
    if (share !== undefined) {
      share.keys.delete(key);
      share.charged -= p.charged;
      if (share.keys.size === 0) this.#senders.delete(p.sender);
    }
    return p;
  }

  #mismatch(key: string | undefined, frame: ChunkFrame, what: string): ReassemblyResult<M> {
    if (key !== undefined) this.#discard(key);
    return {
      status: 'refused',
      fault: new FrameFault(
        'CHUNK_MISMATCH',
        `chunk ${frame.index}/${frame.count} disagrees with its message (${what})`,
        { id: frame.id, index: frame.index, count: frame.count, length: frame.length },
      ),
    };
  }
}
