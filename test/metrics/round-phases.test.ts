import { describe, expect, it } from 'vitest';
import { RoundPhaseClock } from '../../src/metrics/index.ts';

describe('RoundPhaseClock', () => {
  it('splits a round into collect (open → prepare), vote (prepare → decision) and total', () => {
    const clock = new RoundPhaseClock();
    clock.open(7, 1_000);
    expect(clock.prepare(7, 4_500)).toEqual([{ phase: 'collect', seconds: 3.5 }]);
    expect(clock.decided(7, 4_400, 5_250)).toEqual([
      { phase: 'vote', seconds: 0.75 },
      { phase: 'total', seconds: 4.4 },
    ]);
  });

  it('ends the collect phase at the decision of a round aborted before PREPARE', () => {
    const clock = new RoundPhaseClock();
    clock.open(2, 10_000);
    expect(clock.decided(2, 2_100, 12_000)).toEqual([
      { phase: 'collect', seconds: 2 },
      { phase: 'total', seconds: 2.1 },
    ]);
  });

  it('has only the total of a round it did not see open (rollback, restart)', () => {
    const clock = new RoundPhaseClock();
    expect(clock.prepare(4, 100)).toEqual([]);
    clock.open(3, 0);
    expect(clock.decided(5, 1_500, 9_000)).toEqual([{ phase: 'total', seconds: 1.5 }]);
    // round 3 is still open: its own decision measures from its open
    expect(clock.decided(3, 9_000, 9_000)).toEqual([
      { phase: 'collect', seconds: 9 },
      { phase: 'total', seconds: 9 },
    ]);
  });

  it('forgets a round once decided', () => {
    const clock = new RoundPhaseClock();
    clock.open(1, 0);
    clock.decided(1, 500, 500);
    expect(clock.decided(1, 700, 800)).toEqual([{ phase: 'total', seconds: 0.7 }]);
  });
});
