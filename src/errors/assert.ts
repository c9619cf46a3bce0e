import { InvalidArgumentError, UpdateError } from './cohort-error.ts';

/** Throws `INVALID_ARGUMENT` unless `value` is an integer in [min, max]; `name` appears in the message. */
export function assertInteger(
  name: string,
  value: unknown,
  min: number,
  max: number,
): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}], got ${String(value)}`, {
      details: { name, value: String(value), min, max },
    });
  }
}

/** Throws `INVALID_ARGUMENT` naming `name` unless `actual === expected`. */
export function assertLength(name: string, actual: number, expected: number, what = 'expects'): void {
  if (actual !== expected) {
    throw new InvalidArgumentError(`${name} length ${actual}, ${what} ${expected}`, {
      details: { name, actual, expected },
    });
  }
}

/**
 * Throws `UPDATE_NON_FINITE` naming the first index holding NaN or ±Infinity.
 * Runs over the whole array: incoming numbers are never trusted.
 */
export function assertFiniteArray(name: string, values: ArrayLike<number>): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    // v - v is NaN exactly for NaN and ±Infinity, and is cheaper than Number.isFinite in hot loops.
    if (v - v !== 0) {
      throw new UpdateError('UPDATE_NON_FINITE', `${name}[${i}] is ${v}; every value must be finite`, {
        details: { name, index: i, value: String(v) },
      });
    }
  }
}
