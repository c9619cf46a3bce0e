/**
 * A real `AbortSignal` that reads as aborted from its (k + 1)-th look at `aborted` on. The engines
 * look exactly once before each mini-batch (`trainStopReason`), so training with it stops after
 * exactly k steps, with no dependence on timing.
 */
export function abortOnLook(k: number): { signal: AbortSignal; looks: () => number } {
  const signal = new AbortController().signal;
  let looks = 0;
  Object.defineProperty(signal, 'aborted', { get: () => ++looks > k });
  return { signal, looks: () => looks };
}
