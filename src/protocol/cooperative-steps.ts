/**
 * Longest stretch of computation, in milliseconds, between two yields of {@link runStepsYielding}:
 * short enough that heartbeats, lease renewals and NATS pings of the same process stay timely,
 * long enough that the yields' cost (well under a millisecond each) stays negligible.
 */
export const STEP_SLICE_MS = 20;

/**
 * Long CPU work written once as a generator of steps (it yields between steps, returns the
 * result), run either at once ({@link runSteps}) or sharing the event loop ({@link runStepsYielding}).
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to the end without yielding to the event loop; returns its result. */
export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
  }
}

/**
 * Runs `steps` to the end, yielding to the event loop (its check phase, after expired timers and
 * pending I/O) whenever `sliceMs` passed since the last yield. A member's big update (a 10M-parameter
 * model takes seconds to encrypt) then does not starve its own heartbeats, its lease renewal or its
 * connection's pings; the result is the same as {@link runSteps}'.
 */
export async function runStepsYielding<T>(steps: Steps<T>, sliceMs = STEP_SLICE_MS): Promise<T> {
  if (!(Number.isFinite(sliceMs) && sliceMs >= 0)) {
    throw new RangeError(`sliceMs must be a finite number ≥ 0, got ${sliceMs}`);
  }
  let sliceStart = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done === true) return r.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}
