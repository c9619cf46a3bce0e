import { type ChunkFrame, FrameFault } from './chunk-frame.ts';

/** Why a {@link Reassembler} gave up on an incomplete message. */
export type ReassemblyDropReason = 'REASSEMBLY_TIMEOUT' | 'REASSEMBLY_MEMORY';

/** Limits of a {@link Reassembler}. */
export interface ReassemblerOptions {
  /** An incomplete message is dropped this long after its first chunk arrived. */
  readonly timeoutMs: number;
  /** At most this many incomplete messages at once; the oldest is dropped beyond. */
  readonly maxPending: number;
  /**
   * At most this many bytes buffered for incomplete messages (chunk bytes plus
   * {@link PART_OVERHEAD_BYTES} per chunk); the oldest are dropped beyond.
   */
  readonly maxPendingBytes: number;
  /** Called for each incomplete message dropped (timeout or memory bound). */
  readonly onDrop?: (subject: string, id: string, reason: ReassemblyDropReason) => void;
}

/** What {@link Reassembler.accept} did with a chunk. */
export type ReassemblyResult<M = undefined> =
  /** The last chunk came in: the whole message, byte-exact, with the `meta` given with chunk 0. */
  | { readonly status: 'complete'; readonly data: Uint8Array; readonly meta: M | undefined }
  /** Buffered; more chunks are awaited. */
  | { readonly status: 'pending' }
  /** This chunk of this message is already buffered (a retry): ignored. */
  | { readonly status: 'duplicate' }
  /** The chunk disagrees with its message (`CHUNK_MISMATCH`); the partial message is dropped. */
  | { readonly status: 'refused'; readonly fault: FrameFault };

/** Bytes charged per buffered chunk on top of its payload, for the bookkeeping of each part. */
export const PART_OVERHEAD_BYTES = 128;

interface Pending<M> {
  readonly subject: string;
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

const PENDING = Object.freeze({ status: 'pending' } as const);
const DUPLICATE = Object.freeze({ status: 'duplicate' } as const);

/**
 * Puts chunked messages back together, with bounded memory. Pending messages are keyed by
 * subject and sender-chosen id, so one sender cannot disturb another's reassembly; parts are kept
 * in a map (nothing is allocated from a declared count); every non-last chunk must have the
 * size that the declared count implies. Incomplete messages expire after `timeoutMs`, and the
 * oldest are dropped when `maxPending` or `maxPendingBytes` is exceeded. `M` is what the caller
 * keeps of chunk 0 (e.g. its headers) until the message is complete.
 */
export class Reassembler<M = undefined> {
  readonly #options: ReassemblerOptions;
  readonly #pending = new Map<string, Pending<M>>();
  #charged = 0;

  constructor(options: ReassemblerOptions) {
    this.#options = options;
  }

  /** Bytes currently charged for incomplete messages (payload plus per-chunk overhead). */
  get pendingBytes(): number {
    return this.#charged;
  }

  /** Incomplete messages currently buffered. */
  get pendingCount(): number {
    return this.#pending.size;
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
      p = {
        subject,
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
    this.#enforceBounds(key);
    return PENDING;
  }

  /** Drops every incomplete message and stops their timers (no `onDrop`). */
  clear(): void {
    for (const key of [...this.#pending.keys()]) this.#discard(key);
  }

  #enforceBounds(keep: string): void {
    const o = this.#options;
    for (const key of this.#pending.keys()) {
      if (this.#pending.size <= o.maxPending && this.#charged <= o.maxPendingBytes) return;
      if (key !== keep) this.#drop(key, 'REASSEMBLY_MEMORY');
    }
    if (this.#charged > o.maxPendingBytes || this.#pending.size > o.maxPending) {
      this.#drop(keep, 'REASSEMBLY_MEMORY');
    }
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
