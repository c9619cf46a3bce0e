import { assertFiniteArray, assertLength, InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * Boundary check shared by the robust rules: `updates` is a non-empty array of Float32Arrays of
 * one length, every value finite. Errors name the offending index (`updates[2]`, `updates[2][7]`).
 *
 * @returns the common length d
 */
export function checkUpdates(updates: readonly Float32Array[]): number {
  if (!Array.isArray(updates) || updates.length === 0) {
    throw new InvalidArgumentError('updates must hold at least one update', { details: { name: 'updates' } });
  }
  const first = updates[0];
  const d = first instanceof Float32Array ? first.length : 0;
  updates.forEach((u, k) => {
    if (!(u instanceof Float32Array)) {
      throw new InvalidArgumentError(`updates[${k}] must be a Float32Array`, {
        details: { name: `updates[${k}]` },
      });
    }
    assertLength(`updates[${k}]`, u.length, d, 'updates[0] length');
    assertFiniteArray(`updates[${k}]`, u);
  });
  return d;
}
