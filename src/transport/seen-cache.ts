/** What a subscription remembers of a message id it has seen. */
export type SeenEntry =
  | { readonly state: 'running' }
  | { readonly state: 'done'; readonly reply: Uint8Array; readonly error?: string };

/**
 * Bounded LRU of message ids a subscription has handled, with the reply sent for each, so a
 * retried request is answered from the cache instead of running the handler again.
 */
export class SeenCache {
  readonly #capacity: number;
  readonly #entries = new Map<string, SeenEntry>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The entry of `id` (refreshed as most recently used), or `undefined`. */
  get(id: string): SeenEntry | undefined {
    const e = this.#entries.get(id);
    if (e !== undefined) {
      this.#entries.delete(id);
      this.#entries.set(id, e);
    }
    return e;
  }

  /** Records `entry` for `id`, evicting the least recently used ids beyond capacity. */
  set(id: string, entry: SeenEntry): void {
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }
}
