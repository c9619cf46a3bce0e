import { createHash } from 'node:crypto';
import type { MessageHeaders } from './transport.ts';

/** What a subscription remembers of a message it has seen. */
export type SeenEntry =
  | { readonly state: 'running' }
  | { readonly state: 'done'; readonly reply: Uint8Array; readonly error?: string };

/**
 * The de-duplication key of one whole message: its subject (which names the sender under the
 * federation's permissions), the sender-chosen id and the SHA-256 of its bytes (application
 * headers included). Another sender, or other bytes under a known id, give another key: a
 * message id alone is never trusted.
 */
export function seenKey(subject: string, id: string, data: Uint8Array, headers: MessageHeaders): string {
  const h = createHash('sha256');
  const names = Object.keys(headers).sort();
  const len = Buffer.alloc(4);
  for (const k of names) {
    for (const part of [k, headers[k] ?? '']) {
      const b = Buffer.from(part, 'utf8');
      len.writeUInt32BE(b.length);
      h.update(len).update(b);
    }
  }
  len.writeUInt32BE(names.length);
  h.update(len).update(data);
  // Subjects and ids never hold spaces, so the key is unambiguous.
  return `${subject} ${id} ${h.digest('base64url')}`;
}

/**
 * Bounded LRU of messages a subscription has handled, with the reply (or error) sent for each,
 * so a retried request (same subject, id and bytes, see {@link seenKey}) is answered from the
 * cache instead of running the handler again.
 */
/** Replies up to this size may be slices of Node's Buffer pool (`Buffer.poolSize >>> 1`). */
const POOLED_BYTES = 4096;

export class SeenCache {
  readonly #capacity: number;
  readonly #entries = new Map<string, SeenEntry>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `key` (refreshed as most recently used), or `undefined`. */
  get(key: string): SeenEntry | undefined {
    const e = this.#entries.get(key);
    if (e !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, e);
    }
    return e;
  }

  /**
   * Records `entry` for `key`, evicting the least recently used keys beyond capacity. A small reply
   * that is a view into a larger buffer is copied: small encodings are often slices of Node's 8 KiB
   * pool (`Buffer.allocUnsafe` under 4 KiB), and thousands of cached slices would keep thousands of
   * pools alive. A larger view is kept as it is (its buffer is usually held elsewhere anyway).
   */
  set(key: string, entry: SeenEntry): void {
    const kept =
      entry.state === 'done' &&
      entry.reply.byteLength <= POOLED_BYTES &&
      entry.reply.byteLength !== entry.reply.buffer.byteLength
        ? { ...entry, reply: entry.reply.slice() }
        : entry;
    this.#entries.delete(key);
    this.#entries.set(key, kept);
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }
}
