import {
  assertFiniteArray,
  assertInteger,
  assertLength,
  InvalidArgumentError,
} from '../../src/errors/index.ts';

/*
 * Validation of the kernel API. `train`, `evaluate` and the optimizer hyper-parameters use the CPU
 * reference engine's validators (`gpu/cpu`), so both engines refuse the same inputs with the same
 * messages.
 */

/** Largest kernel dimension accepted (as the CPU engine). */
const MAX_DIMENSION = 1 << 26;

/** Throws `INVALID_ARGUMENT` unless `value` is an integer in [1, 2^26] (a kernel dimension). */
export function assertDim(name: string, value: number): void {
  assertInteger(name, value, 1, MAX_DIMENSION);
}

/**
 * Checks a float32 kernel input: a Float32Array of the expected length (`INVALID_ARGUMENT` naming
 * both), all finite (`UPDATE_NON_FINITE` naming the index, like the CPU engine).
 */
export function assertFloatInput(name: string, values: Float32Array, expected: number, what: string): void {
  if (!(values instanceof Float32Array)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array, got ${String(values)}`, {
      details: { name },
    });
  }
  assertLength(name, values.length, expected, what);
  assertFiniteArray(name, values);
}
