import { assertInteger } from '../errors/index.ts';

/** Addresses tracked at most; past it, windows that ended are dropped, then the oldest. */
export const MAX_TRACKED_ADDRESSES = 10_000;

/** What {@link AddressLimiter.take} decided. */
export interface AddressVerdict {
  readonly allowed: boolean;
  /** Seconds until the address's window ends (for `Retry-After`). */
  readonly retryAfterS: number;
}

/**
 * A fixed-window budget per client address, for requests without a valid token only: cheap (one
 * map lookup), bounded in memory ({@link MAX_TRACKED_ADDRESSES}), and never touched by a request a
 * token authenticated, so a flood of bad requests costs no token its budget.
 */
export class AddressLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(max: number, windowMs: number, now: () => number = Date.now) {
    assertInteger('max', max, 1, Number.MAX_SAFE_INTEGER);
    assertInteger('windowMs', windowMs, 1, Number.MAX_SAFE_INTEGER);
    this.#max = max;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** Counts one request from `address`; `allowed` while the address is within its budget. */
  take(address: string): AddressVerdict {
    const now = this.#now();
    let w = this.#windows.get(address);
    if (w === undefined || now - w.start >= this.#windowMs) {
      if (w === undefined && this.#windows.size >= MAX_TRACKED_ADDRESSES) this.#evict(now);
      w = { start: now, count: 0 };
      this.#windows.delete(address);
      this.#windows.set(address, w);
    }
    w.count++;
    const retryAfterS = Math.max(1, Math.ceil((w.start + this.#windowMs - now) / 1000));
    return { allowed: w.count <= this.#max, retryAfterS };
  }

  #evict(now: number): void {
    for (const [address, w] of this.#windows) {
      if (now - w.start >= this.#windowMs) this.#windows.delete(address);
    }
    // Still full: the oldest window goes (insertion order is window start order).
    while (this.#windows.size >= MAX_TRACKED_ADDRESSES) {
      const oldest = this.#windows.keys().next().value;
      if (oldest === undefined) break;
      this.#windows.delete(oldest);
    }
  }
}
