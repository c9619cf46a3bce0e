import { CohortError } from '../../src/errors/index.ts';

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
