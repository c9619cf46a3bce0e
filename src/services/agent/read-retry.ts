import { backoffDelay, sleep } from '../../retry/index.ts';
import type { AgentCore } from './agent-core.ts';

/** Codes of errors that say a store or the log could not answer now, not that anything is wrong. */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set(['STORE_UNAVAILABLE', 'LOG_UNAVAILABLE']);

/**
 * Whether `err` (or an error in its `cause` chain) is a read that could not be answered now: a
 * store or the log that did not answer in time. Such a failure says nothing about the round, so a
 * voter abstains rather than objecting (docs/round-protocol.md, "Abstaining").
 */
export function readUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 16; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
  }
  return false;
}

/**
 * `read()`, tried again while it fails with a read that could not be answered now
 * ({@link readUnavailable}: a server that stalls for a moment on a loaded host), up to
 * `nats.maxRetry` more times with backoff, as a request is; any other failure, or the last one, is
 * thrown as it is.
 */
export async function retryUnavailable<T>(core: AgentCore, read: () => Promise<T>): Promise<T> {
  const maxRetry = core.ctx.config.nats.maxRetry;
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (!readUnavailable(err) || attempt >= maxRetry) throw err;
      await sleep(backoffDelay(attempt + 1, { baseMs: 100, maxMs: 2000 }));
    }
  }
}
