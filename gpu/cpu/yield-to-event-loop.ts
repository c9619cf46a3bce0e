/**
 * Longest stretch of computation, in milliseconds, between two yields of a CPU training loop:
 * short enough for heartbeats and message handling to stay timely, long enough that the yields'
 * cost (well under a millisecond each) stays negligible.
 */
export const YIELD_EVERY_MS = 20;

/**
 * Resolves on the event loop's next check phase, after expired timers and pending I/O callbacks
 * have run (a resolved promise would only let other microtasks run).
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
