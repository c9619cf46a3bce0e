// Who sits out a re-sharing after silence or complaints: hand-worked cases of one hostile member,
// as the dealer of garbage or as a false accuser.
import { describe, expect, it } from 'vitest';
import {
  EXCLUDED_ROUNDS,
  outvotedConfirmations,
  ReshareExclusions,
} from '../../../src/services/coordinator/reshare-exclusions.ts';

const out = (x: ReshareExclusions, round: number, sites = ['s1', 's2', 's3', 's4', 's5']) =>
  sites.filter((s) => x.isOut(s, round));

describe('re-sharing exclusions', () => {
  it('silent sites sit out for EXCLUDED_ROUNDS rounds, then come back', () => {
    const x = new ReshareExclusions();
    x.silent(['s2'], 5);
    expect(out(x, 5)).toEqual(['s2']);
    expect(out(x, 5 + EXCLUDED_ROUNDS)).toEqual(['s2']);
    expect(out(x, 6 + EXCLUDED_ROUNDS)).toEqual([]);
  });

  it('a complaint leaves out accuser and accused; too few sites bring the accuser back first', () => {
    const x = new ReshareExclusions();
    expect(x.complaints([['s1', 's5']], 3).sort()).toEqual(['s1', 's5']);
    expect(out(x, 3)).toEqual(['s1', 's5']);
    x.release();
    expect(out(x, 3)).toEqual(['s5']);
    x.release();
    expect(out(x, 3)).toEqual([]);
  });

  it('a dealer accused by two sites is the culprit: it stays out, neither accuser does', () => {
    const x = new ReshareExclusions();
    x.complaints([['s1', 's5']], 3);
    x.release();
    expect(x.complaints([['s2', 's5']], 4)).toEqual(['s5']);
    expect(out(x, 4)).toEqual(['s5']);
    // Two victims in one attempt: the same.
    const y = new ReshareExclusions();
    expect(
      y.complaints(
        [
          ['s1', 's5'],
          ['s2', 's5'],
        ],
        3,
      ),
    ).toEqual(['s5']);
    expect(out(y, 3)).toEqual(['s5']);
  });

  it('an accuser that then goes silent forfeits its accusation: the accused comes back', () => {
    const x = new ReshareExclusions();
    x.complaints([['s1', 's3']], 3);
    x.release();
    expect(out(x, 3)).toEqual(['s3']);
    x.silent(['s1'], 3);
    expect(out(x, 3)).toEqual(['s1']);
    // … and is taken for the liar: it stays out when the silent come back.
    x.release();
    expect(out(x, 3)).toEqual(['s1']);
  });

  it('a newer accusation counts over an older silence', () => {
    const x = new ReshareExclusions();
    x.silent(['s5'], 1);
    x.complaints([['s1', 's5']], 12);
    expect(out(x, 13)).toEqual(['s1', 's5']);
  });

  it('a site that accuses a second dealer is taken for the liar: it sits out, its first accused comes back', () => {
    const x = new ReshareExclusions();
    x.complaints([['s1', 's3']], 3);
    x.release(); // too few: the accuser comes back, the accused stays out
    expect(out(x, 3)).toEqual(['s3']);
    expect(x.complaints([['s1', 's2']], 4)).toEqual(['s1']);
    expect(out(x, 4)).toEqual(['s1']);
    // The liar stays out when the silent are released.
    x.silent(['s4'], 4);
    x.release();
    expect(out(x, 4)).toEqual(['s1']);
  });

  it('the same accusation again is not a second dealer', () => {
    const x = new ReshareExclusions();
    x.complaints([['s1', 's3']], 3);
    x.release();
    expect(x.complaints([['s1', 's3']], 5).sort()).toEqual(['s1', 's3']);
    expect(out(x, 5)).toEqual(['s1', 's3']);
  });

  it('readies confirming different data keys: the sites outside the largest group, whoever answered first', () => {
    const m = (pairs: [string, string][]) => new Map(pairs);
    expect(
      outvotedConfirmations(
        m([
          ['s1', 'a'],
          ['s2', 'a'],
          ['s3', 'a'],
        ]),
      ),
    ).toEqual([]);
    // The odd one answered first: it alone is out.
    expect(
      outvotedConfirmations(
        m([
          ['s3', 'b'],
          ['s1', 'a'],
          ['s2', 'a'],
        ]),
      ),
    ).toEqual(['s3']);
    // A tie leaves no group to trust.
    expect(
      outvotedConfirmations(
        m([
          ['s1', 'a'],
          ['s2', 'b'],
        ]),
      ),
    ).toEqual(['s1', 's2']);
  });
});
