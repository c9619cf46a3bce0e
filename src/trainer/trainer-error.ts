import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link TrainerError}; never renamed once released. */
export const TRAINER_ERROR_CODES = [
  /** `workDir` is not a directory, is open to group or others, or cannot be created or written. */
  'TRAINER_WORKDIR',
  /** The command could not be started (no such file, not executable); the OS error is the cause. */
  'TRAINER_SPAWN_FAILED',
  /** The trainer exited with a nonzero code or died of a signal; `details.stderrTail` holds its last words. */
  'TRAINER_EXIT',
  /** The trainer ran past `timeoutMs`; its process group was sent SIGTERM, then SIGKILL. */
  'TRAINER_TIMEOUT',
  /** The caller's signal aborted the call; the process group was killed as on a timeout. */
  'TRAINER_ABORTED',
  /** The trainer exited 0 without writing `result.json` (or, for train, `result.safetensors`). */
  'TRAINER_RESULT_MISSING',
  /** `result.json` or `result.safetensors` is larger than the agent accepts. */
  'TRAINER_RESULT_TOO_LARGE',
  /** `result.json` is not a regular file, not UTF-8 JSON, or a field is missing or out of range (the message names it). */
  'TRAINER_RESULT_INVALID',
  /** `result.safetensors` is not a safetensors file of the model: names, shapes, dtype, non-finite weights. */
  'TRAINER_WEIGHTS_INVALID',
  /** An example count differs from the one `describe` reported: the site's data changed; describe again. */
  'TRAINER_EXAMPLES_CHANGED',
  /** The trainer's labels do not fit the model: `describe` reported more classes than the model outputs. */
  'TRAINER_CLASSES_MISMATCH',
  /** `evaluate` on a site whose trainer reported no validation rows. */
  'TRAINER_NO_VALIDATION',
  /**
   * `statistics` on a site whose trainer's `describe` reported no `features` (the feature count per
   * row), so the sums cannot be checked against the rows' width; the trainer must report it.
   */
  'TRAINER_NO_FEATURES',
] as const;

export type TrainerErrorCode = (typeof TRAINER_ERROR_CODES)[number];

/**
 * A call to an external trainer failed: it could not start, failed, timed out, or returned
 * something the agent refuses. The message names the file and the field (`result.json: examples
 * is -3, must be a positive integer`); `details.callDir` is the per-call folder, kept for
 * debugging, and `details.stderrTail` the last bytes the trainer wrote to stderr, when known.
 */
export class TrainerError extends CohortError {
  declare readonly code: TrainerErrorCode;

  constructor(
    code: TrainerErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
