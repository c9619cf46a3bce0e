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
/**
 * How long a handled message is remembered, ms. A retried request comes within its sender's
 * attempts × timeout (6 × 3 s by default); remembering longer than that only holds memory, which
 * would otherwise grow for as many messages as the capacity (4,096 per subscription: a thousand
 * rounds of votes) before it levels off. A message replayed after this is handled again and meets
 * the handler's own checks (a vote's round and attempt, a heartbeat's time).
 */
export const SEEN_TTL_MS = 120_000;

/** Replies up to this size may be slices of Node's Buffer pool (`Buffer.poolSize >>> 1`). */
const POOLED_BYTES = 4096;

export class SeenCache {
  readonly #capacity: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** In order of last use, which is also the order of `at`: the oldest first. */
  readonly #entries = new Map<string, { entry: SeenEntry; at: number }>();

  /** At most `capacity` entries, each for at most `ttlMs` after its last use. */
  constructor(capacity: number, ttlMs = SEEN_TTL_MS, now: () => number = Date.now) {
    this.#capacity = capacity;
    this.#ttlMs = ttlMs;
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `key` (refreshed as most recently used), or `undefined` (never seen, or expired). */
  get(key: string): SeenEntry | undefined {
    const now = this.#now();
    this.#expire(now);
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, { entry: e.entry, at: now });
    return e.entry;
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
    const now = this.#now();
    this.#entries.delete(key);
    this.#entries.set(key, { entry: kept, at: now });
    this.#expire(now);
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }

  /** Drops the entries last used more than the TTL ago (the oldest come first). */
  #expire(now: number): void {
    for (const [key, e] of this.#entries) {
      if (now - e.at <= this.#ttlMs) break;
      this.#entries.delete(key);
    }
  }
}
