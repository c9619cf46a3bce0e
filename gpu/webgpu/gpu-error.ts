import { CohortError } from '../../src/errors/index.ts';

/** Stable codes of {@link GpuError}. */
export type GpuErrorCode =
  /** No WebGPU adapter at all (no Vulkan driver, no dawn.node binary for this platform). */
  | 'GPU_NOT_FOUND'
  /** Only a software (fallback) adapter was found and software was not allowed. */
  | 'GPU_SOFTWARE_REFUSED'
  /** The device was lost (driver reset, out of memory, destroyed) or the engine was disposed. */
  | 'GPU_DEVICE_LOST'
  /** A WebGPU validation or out-of-memory error while running kernels (a bug or a too-large model). */
  | 'GPU_INTERNAL';

/** A GPU could not be found, was refused, or failed; `details` names what was searched and found. */
export class GpuError extends CohortError {
  declare readonly code: GpuErrorCode;

  constructor(
    code: GpuErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(code, message, options);
  }
}
