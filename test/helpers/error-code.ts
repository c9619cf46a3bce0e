import { expect } from 'vitest';
import { BlockRejectedError, CohortError } from '../../src/errors/index.ts';

/** The stable code of the `CohortError` that `fn` throws; fails the test when it throws nothing or something else. */
export function errorCode(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof CohortError) return error.code;
    throw error;
  }
  throw new Error('expected a CohortError');
}

/** The error `promise` rejects with, checked to be a `type`; fails the test when it resolves. */
export async function rejection<T extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  const err = await promise.then(
    () => {
      throw new Error(`expected a ${type.name}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as T;
}

/** The `BlockRejectedError` reason `fn` throws, or `'accepted'` when it throws nothing (rethrows anything else). */
export function blockReason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof BlockRejectedError) return err.reason;
    throw err;
  }
  return 'accepted';
}
