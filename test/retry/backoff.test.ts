// backoffDelay: exponential from baseMs, capped at maxMs, equal jitter (half fixed, half random),
// hand-computed at the extremes of the random draw; arguments are checked by name.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { backoffDelay } from '../../src/retry/index.ts';

describe('backoffDelay', () => {
  const low = () => 0;
  const high = () => 0.999_999;

  it('doubles from baseMs up to maxMs, half of it fixed and half drawn', () => {
    const o = { baseMs: 100, maxMs: 1000 };
    expect([1, 2, 3, 4, 5, 9].map((a) => backoffDelay(a, { ...o, random: low }))).toEqual([
      50, 100, 200, 400, 500, 500,
    ]);
    expect([1, 2, 3, 4, 5, 9].map((a) => backoffDelay(a, { ...o, random: high }))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelay(1, { baseMs: 1, maxMs: 1, random: low })).toBe(1);
    expect(backoffDelay(1_000, { baseMs: 7, maxMs: 30_000, random: high })).toBe(30_000);
  });

  it('stays within [ceil(d/2), d] of the exponential delay d for any draw', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 80 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 0.999_999_9, noNaN: true }),
        (attempt, baseMs, extra, r) => {
          const maxMs = baseMs + extra;
          const d = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 52));
          const got = backoffDelay(attempt, { baseMs, maxMs, random: () => r });
          return Number.isInteger(got) && got >= Math.ceil(d / 2) && got <= d;
        },
      ),
    );
  });

  it('names the argument it refuses', () => {
    const o = { baseMs: 10, maxMs: 100 };
    for (const a of [0, -1, 1.5, Number.NaN]) expect(() => backoffDelay(a, o)).toThrow(/attempt/);
    expect(() => backoffDelay(1, { baseMs: 0, maxMs: 10 })).toThrow(/options\.baseMs/);
    expect(() => backoffDelay(1, { baseMs: Number.POSITIVE_INFINITY, maxMs: 10 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => backoffDelay(1, { baseMs: 10, maxMs: 5 })).toThrow(/options\.maxMs/);
  });
});
