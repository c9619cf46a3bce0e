import type { TrainConfig } from './engine.ts';

/**
 * Whether training must stop before its next mini-batch: 'aborted' when `config.signal` is
 * aborted, else 'deadline' when `Date.now()` has reached `config.stopAtUnixMs`, else null. Both
 * engines call it once before every mini-batch (the first included), so a deadline that has passed
 * when a mini-batch ends stops training right after that mini-batch. Reads `signal.aborted` once
 * per call; `config` is assumed validated.
 */
export function trainStopReason(config: TrainConfig): 'aborted' | 'deadline' | null {
  if (config.signal?.aborted === true) return 'aborted';
  if (config.stopAtUnixMs !== undefined && Date.now() >= config.stopAtUnixMs) return 'deadline';
  return null;
}

/** True when `config` can cut training short (it has a signal or a deadline). */
export function trainCanStop(config: TrainConfig): boolean {
  return config.signal !== undefined || config.stopAtUnixMs !== undefined;
}
