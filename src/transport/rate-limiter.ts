import { InvalidArgumentError } from '../errors/index.ts';

/** Per-sender rate limit of a subscription (`SubscribeOptions.rateLimit`). */
export interface RateLimitOptions {
  /** Chunks per second a sender's bucket regains (> 0). */
  readonly perSecond: number;
  /** Bucket size: chunks a sender may send at once after being idle (≥ 1). */
  readonly burst: number;
  /**
   * The sender a subject belongs to; default: the subject itself (Cohort subjects name their
   * sender, and the federation's permissions let a member publish only its own). The same key
   * gives each sender its own share of the subscription's reassembly buffer (`ChunkIntake`).
   */
  readonly senderOf?: (subject: string) => string;
}

/**
 * The sender of `subject` under `senderOf` (the subject itself without one). A mapper that throws
 * maps the subject to itself: a failing mapper must not open a gate or merge senders.
 */
export function senderKey(senderOf: ((subject: string) => string) | undefined, subject: string): string {
  if (senderOf === undefined) return subject;
  try {
    const sender = senderOf(subject);
    return typeof sender === 'string' ? sender : subject;
  } catch {
    return subject;
  }
}

/** Senders whose buckets a {@link RateLimiter} remembers by default (least recently used beyond). */
export const DEFAULT_MAX_SENDERS = 4096;

interface Bucket {
  tokens: number;
  at: number;
}

/** Throws `INVALID_ARGUMENT` unless `r` is a well-formed {@link RateLimitOptions}. */
export function assertRateLimit(name: string, r: unknown): asserts r is RateLimitOptions | undefined {
  if (r === undefined) return;
  const o = r as Partial<RateLimitOptions> | null;
  const bad = (problem: string): never => {
    throw new InvalidArgumentError(`${name} ${problem}`, { details: { name } });
  };
  if (typeof o !== 'object' || o === null) bad('must be an object');
  if (typeof o!.perSecond !== 'number' || !Number.isFinite(o!.perSecond) || o!.perSecond <= 0) {
    bad('.perSecond must be a finite number > 0');
  }
  if (typeof o!.burst !== 'number' || !Number.isFinite(o!.burst) || o!.burst < 1) {
    bad('.burst must be a finite number ≥ 1');
  }
  if (o!.senderOf !== undefined && typeof o!.senderOf !== 'function') bad('.senderOf must be a function');
}

/**
 * Token buckets, one per sender, each `burst` deep and refilled at `perSecond`; each chunk costs
 * one token. At most `maxSenders` buckets are kept (least recently used evicted), so a flood of
 * sender names cannot grow memory.
 */
export class RateLimiter {
  readonly #perMs: number;
  readonly #burst: number;
  readonly #senderOf: ((subject: string) => string) | undefined;
  readonly #maxSenders: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: RateLimitOptions, maxSenders = DEFAULT_MAX_SENDERS, now: () => number = Date.now) {
    assertRateLimit('rateLimit', options);
    this.#perMs = options.perSecond / 1000;
    this.#burst = options.burst;
    this.#senderOf = options.senderOf;
    this.#maxSenders = maxSenders;
    this.#now = now;
  }

  /** Buckets currently remembered. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Takes one token from the bucket of the sender of `subject`; false when it is empty. */
  take(subject: string): boolean {
    const sender = senderKey(this.#senderOf, subject);
    const now = this.#now();
    let b = this.#buckets.get(sender);
    if (b === undefined) {
      b = { tokens: this.#burst, at: now };
    } else {
      this.#buckets.delete(sender); // re-inserted below: most recently used last
      b.tokens = Math.min(this.#burst, b.tokens + Math.max(0, now - b.at) * this.#perMs);
      b.at = now;
    }
    this.#buckets.set(sender, b);
    while (this.#buckets.size > this.#maxSenders) {
      const oldest = this.#buckets.keys().next();
      if (oldest.done) break;
      this.#buckets.delete(oldest.value);
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }
}
