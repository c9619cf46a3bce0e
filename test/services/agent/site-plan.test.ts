// The site's plan per kind of round: every kind the coordinator opens or prepares has one, a
// training round written before kinds ('') is a training round, and a kind the site does not
// know (or an inherited property name) has none, so the site skips the round or votes NO.
import { describe, expect, it } from 'vitest';
import { sitePlanFor } from '../../../src/services/agent/site-plan.ts';

describe('sitePlanFor', () => {
  it('has a plan for each kind of round, the same for "" and "round"', () => {
    for (const kind of ['', 'round', 'statistics', 'rollback']) expect(sitePlanFor(kind)).toBeDefined();
    expect(sitePlanFor('')).toBe(sitePlanFor('round'));
    expect(sitePlanFor('statistics')).not.toBe(sitePlanFor('round'));
  });

  it('has none for an unknown kind, nor for a name every object inherits', () => {
    for (const kind of ['ROUND', 'genesis', 'toString', '__proto__', 'constructor', 'hasOwnProperty'])
      expect(sitePlanFor(kind)).toBeUndefined();
  });

  it('a rollback takes no updates', () => {
    expect(sitePlanFor('rollback')!.refusal({} as never, {} as never)).toBe(
      'a rollback round takes no updates',
    );
  });
});
