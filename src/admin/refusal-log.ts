import type { FastifyBaseLogger } from 'fastify';
import { assertInteger } from '../errors/index.ts';
import type { AdminRefusalReason } from './admin-refusals.ts';

/** Distinct addresses a summary names at most. */
const MAX_ADDRESSES = 5;

/**
 * The API's refusals in its log, aggregated: the first refusal after a quiet window is logged at
 * once, the rest are counted and summarized in one line per window (by reason, with the number of
 * addresses and the first few), so a flood writes a line a window, not a line a request. Metrics
 * count every refusal.
 */
export class RefusalLog {
  readonly #logger: FastifyBaseLogger | undefined;
  readonly #windowMs: number;
  readonly #now: () => number;
  #counts = new Map<AdminRefusalReason, number>();
  #addresses = new Set<string>();
  #windowStart = Number.NEGATIVE_INFINITY;
  #timer: NodeJS.Timeout | undefined;

  constructor(logger: FastifyBaseLogger | undefined, windowMs: number, now: () => number = Date.now) {
    assertInteger('windowMs', windowMs, 1, Number.MAX_SAFE_INTEGER);
    this.#logger = logger;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** Records one refusal of a request from `address`. */
  record(reason: AdminRefusalReason, address: string, route: string | undefined): void {
    if (this.#logger === undefined) return;
    const now = this.#now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.flush();
      this.#windowStart = now;
      this.#logger.info(
        { reason, address, route },
        `admin API refused a request (${reason}); further refusals are summarized every ${Math.round(this.#windowMs / 1000)} s`,
      );
      this.#timer = setTimeout(() => this.flush(), this.#windowMs);
      this.#timer.unref();
      return;
    }
    this.#counts.set(reason, (this.#counts.get(reason) ?? 0) + 1);
    if (this.#addresses.size < 1000) this.#addresses.add(address);
  }

  /** Logs the refusals counted since the last line, if any (and at close). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#counts.size === 0 || this.#logger === undefined) return;
    const byReason = Object.fromEntries(this.#counts);
    const total = [...this.#counts.values()].reduce((a, b) => a + b, 0);
    const addresses = [...this.#addresses];
    this.#logger.info(
      { refused: byReason, addresses: addresses.length, from: addresses.slice(0, MAX_ADDRESSES) },
      `admin API refused ${total} more request(s)`,
    );
    this.#counts = new Map();
    this.#addresses = new Set();
  }
}
