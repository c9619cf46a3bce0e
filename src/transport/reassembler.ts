import type { ChunkFrame } from './chunk-frame.ts';
import { TransportError } from './transport-error.ts';

/** Limits of a {@link Reassembler}. */
export interface ReassemblerOptions {
  /** An incomplete message is dropped this long after its first chunk arrived. */
  readonly timeoutMs: number;
  /** At most this many incomplete messages at once; the oldest is dropped beyond. */
  readonly maxPending: number;
  /** At most this many bytes buffered for incomplete messages; the oldest are dropped beyond. */
  readonly maxPendingBytes: number;
  /** Called with the id of each incomplete message dropped (timeout or memory bound). */
  readonly onDrop?: (id: string, reason: 'timeout' | 'memory') => void;
}

interface Pending {
  readonly count: number;
  readonly length: number;
  readonly parts: (Uint8Array | undefined)[];
  received: number;
  bytes: number;
  readonly timer: NodeJS.Timeout;
}

/**
 * Puts chunked messages back together, with bounded memory: incomplete messages expire after
 * `timeoutMs`, and the oldest are dropped when `maxPending` or `maxPendingBytes` is exceeded.
 */
export class Reassembler {
  readonly #options: ReassemblerOptions;
  readonly #pending = new Map<string, Pending>();
  #bytes = 0;

  constructor(options: ReassemblerOptions) {
    this.#options = options;
  }

  /** Bytes currently buffered for incomplete messages. */
  get pendingBytes(): number {
    return this.#bytes;
  }

  /** Incomplete messages currently buffered. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Takes one chunk; returns the whole message once its last chunk is in, else `undefined`.
   * Throws `TRANSPORT_CHUNK` (and drops the partial message) when the chunk disagrees with
   * its siblings.
   */
  accept(subject: string, frame: ChunkFrame): Uint8Array | undefined {
    if (frame.count === 1) {
      if (frame.data.length !== frame.length) throw this.#mismatch(subject, frame, 'length');
      return frame.data;
    }
    let p = this.#pending.get(frame.id);
    if (p === undefined) {
      p = {
        count: frame.count,
        length: frame.length,
        parts: new Array<Uint8Array | undefined>(frame.count),
        received: 0,
        bytes: 0,
        timer: setTimeout(() => this.#drop(frame.id, 'timeout'), this.#options.timeoutMs).unref(),
      };
      this.#pending.set(frame.id, p);
    } else if (p.count !== frame.count || p.length !== frame.length) {
      this.#discard(frame.id);
      throw this.#mismatch(subject, frame, 'count or length');
    }
    if (p.parts[frame.index] !== undefined) return undefined; // duplicate chunk (a retry)
    p.parts[frame.index] = frame.data;
    p.received++;
    p.bytes += frame.data.length;
    this.#bytes += frame.data.length;
    if (p.bytes > p.length) {
      this.#discard(frame.id);
      throw this.#mismatch(subject, frame, 'length');
    }
    if (p.received === p.count) {
      this.#discard(frame.id);
      if (p.bytes !== p.length) throw this.#mismatch(subject, frame, 'length');
      const out = new Uint8Array(p.length);
      let off = 0;
      for (const part of p.parts) {
        out.set(part!, off);
        off += part!.length;
      }
      return out;
    }
    this.#enforceBounds(frame.id);
    return undefined;
  }

  /** Drops every incomplete message and stops their timers. */
  clear(): void {
    for (const id of [...this.#pending.keys()]) this.#discard(id);
  }

  #enforceBounds(keep: string): void {
    for (const id of this.#pending.keys()) {
      if (this.#pending.size <= this.#options.maxPending && this.#bytes <= this.#options.maxPendingBytes)
        return;
      if (id !== keep) this.#drop(id, 'memory');
    }
    if (this.#bytes > this.#options.maxPendingBytes) this.#drop(keep, 'memory');
  }

  #drop(id: string, reason: 'timeout' | 'memory'): void {
    if (this.#discard(id)) this.#options.onDrop?.(id, reason);
  }

  #discard(id: string): boolean {
    const p = this.#pending.get(id);
    if (p === undefined) return false;
    clearTimeout(p.timer);
    this.#bytes -= p.bytes;
    this.#pending.delete(id);
    return true;
  }

  #mismatch(subject: string, frame: ChunkFrame, what: string): TransportError {
    return new TransportError(
      'TRANSPORT_CHUNK',
      `message on ${subject}: chunk ${frame.index}/${frame.count} disagrees with its message (${what})`,
      { details: { subject, id: frame.id, index: frame.index, count: frame.count, length: frame.length } },
    );
  }
}
