import { InvalidArgumentError } from '../errors/index.ts';

/** How {@link backoffDelay} grows and spreads delays. */
export interface BackoffOptions {
  /** The first retry's delay before jitter, ms (> 0). */
  readonly baseMs: number;
  /** The largest delay, ms (≥ `baseMs`). */
  readonly maxMs: number;
  /** Uniform in [0, 1) (default `Math.random`); tests pass a fixed one. */
  readonly random?: () => number;
}

/**
 * The delay before retry number `attempt` (1 for the first retry), ms: `baseMs · 2^(attempt−1)`,
 * capped at `maxMs`, with "equal jitter": half of it fixed, half uniform at random. Members that
 * failed together (a server restart, a lost leader) then retry spread over the window instead of
 * in step, and none retries sooner than half the exponential delay (Brooker, "Exponential Backoff
 * And Jitter", AWS Architecture Blog, 2015). Invariant: `ceil(d/2) ≤ result ≤ d` for that `d`.
 */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new InvalidArgumentError(`attempt is ${attempt}, expects an integer ≥ 1`, {
      details: { name: 'attempt' },
    });
  }
  const { baseMs, maxMs } = options;
  if (!Number.isFinite(baseMs) || baseMs <= 0) {
    throw new InvalidArgumentError(`options.baseMs is ${baseMs}, expects a finite number > 0`, {
      details: { name: 'options.baseMs' },
    });
  }
  if (!Number.isFinite(maxMs) || maxMs < baseMs) {
    throw new InvalidArgumentError(
      `options.maxMs is ${maxMs}, expects a finite number ≥ baseMs (${baseMs})`,
      {
        details: { name: 'options.maxMs' },
      },
    );
  }
  const random = options.random ?? Math.random;
  const full = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));
  const half = Math.ceil(full / 2);
  return Math.min(full, half + Math.floor(random() * (full - half + 1)));
}

/** Resolves after `ms`; the timer does not keep the process alive. */
export function sleep(ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    setTimeout(resolve, Math.max(0, ms)).unref();
  });
}
