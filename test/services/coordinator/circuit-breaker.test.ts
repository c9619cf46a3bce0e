// The circuit breaker's state machine (src/services/coordinator/circuit-breaker.ts), by hand:
// every share below is worked out from the outcomes fed in.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/index.ts';
import {
  type BreakerSettings,
  CircuitBreaker,
  levelFor,
  type RoundOutcome,
} from '../../../src/services/coordinator/index.ts';
import { errorCode } from '../../helpers/error-code.ts';

const SETTINGS: BreakerSettings = {
  enabled: true,
  window: 3,
  shrinkAt: 0.2,
  dropOptionalAt: 0.4,
  freezeAt: 0.6,
  coolDownRounds: 2,
  coolDownMs: 1000,
};

const SITES = ['s1', 's2', 's3', 's4', 's5'];

/** Round `round` over the five sites, `failing` of them failed. */
function outcome(round: number, failing: string[], committed = true): RoundOutcome {
  return { round, expected: SITES, failing, committed };
}

describe('CircuitBreaker', () => {
  it('stays closed while every site delivers', () => {
    const b = new CircuitBreaker(SETTINGS);
    for (let r = 1; r <= 10; r++) expect(b.observe(outcome(r, []), r * 100)).toBeUndefined();
    expect(b.state()).toMatchObject({ level: 0, name: 'closed', share: 0, rounds: 3, transitions: 0 });
    expect(b.cohort(SITES, 3)).toEqual({ sites: SITES, leftOut: [], short: false });
    expect(b.dropsOptionalWork).toBe(false);
  });

  it('computes the share over site-rounds of the last `window` rounds', () => {
    const b = new CircuitBreaker({ ...SETTINGS, shrinkAt: 0.9, dropOptionalAt: 0.95, freezeAt: 1 });
    b.observe(outcome(1, ['s1']), 0); // 1/5
    expect(b.share()).toBeCloseTo(0.2, 12);
    b.observe(outcome(2, ['s1', 's2']), 0); // 3/10
    expect(b.share()).toBeCloseTo(0.3, 12);
    b.observe(outcome(3, []), 0); // 3/15
    expect(b.share()).toBeCloseTo(0.2, 12);
    b.observe(outcome(4, []), 0); // round 1 leaves the window: 2/15
    expect(b.share()).toBeCloseTo(2 / 15, 12);
    expect(b.failingSites()).toEqual(['s1', 's2']);
    b.observe(outcome(5, []), 0); // 0/15
    expect(b.share()).toBe(0);
    expect(b.failingSites()).toEqual([]);
  });

  it('ignores failing sites the round did not expect, duplicates, and rounds that expected nobody', () => {
    const b = new CircuitBreaker(SETTINGS);
    expect(b.observe({ round: 1, expected: [], failing: ['s1'], committed: false }, 0)).toBeUndefined();
    expect(b.state().rounds).toBe(0);
    b.observe(
      { round: 2, expected: ['s1', 's1', 's2', 's3', 's4'], failing: ['x', 's5'], committed: true },
      0,
    );
    expect(b.share()).toBe(0);
    expect(b.level).toBe(0);
  });

  it('rises only on a full window, then straight to the level the share calls for', () => {
    const b = new CircuitBreaker(SETTINGS);
    expect(b.observe(outcome(1, ['s1', 's2', 's3']), 3000)).toBeUndefined(); // 3/5, 1 round of 3
    expect(b.observe(outcome(2, ['s1', 's2', 's3']), 4000)).toBeUndefined(); // 6/10, 2 rounds of 3
    expect(b.level).toBe(0);
    const t = b.observe(outcome(3, ['s1', 's2', 's3']), 5000); // 9/15 = 0.6 ≥ freezeAt
    expect(t).toMatchObject({ from: 0, to: 3, round: 3, atMs: 5000 });
    expect(t!.share).toBeCloseTo(0.6, 12);
    expect(t!.reason).toMatch(/failing share 0\.600 over 3 round\(s\) reached frozen at 0\.6/);
    expect(b.state()).toMatchObject({ level: 3, name: 'frozen', probeAtMs: 6000, changedAtMs: 5000 });
  });

  it('weighs one bad round among `window` as 1 / window', () => {
    const b = new CircuitBreaker({ ...SETTINGS, window: 5 });
    for (let r = 1; r <= 4; r++) b.observe(outcome(r, []), 0);
    // Every site failed once: 5/25 = 0.2, shrink only.
    expect(b.observe(outcome(5, SITES), 0)).toMatchObject({ from: 0, to: 1 });
    // All tied at one failure: two sit out (by id) so three remain; nobody failed every round of
    // the window, so the three kept in do not escalate.
    expect(b.cohort(SITES, 3)).toEqual({ sites: ['s3', 's4', 's5'], leftOut: ['s1', 's2'], short: false });
  });

  it('shrinks: leaves out the sites that failed in the window, most failures first, never below minContributors', () => {
    const b = new CircuitBreaker(SETTINGS);
    b.observe(outcome(1, ['s5']), 0);
    b.observe(outcome(2, ['s4', 's5']), 0);
    const t = b.observe(outcome(3, ['s5']), 0); // 4/15 ≥ shrinkAt; s5 failed 3 of 3, s4 1 of 3
    expect(t).toMatchObject({ from: 0, to: 1 });
    expect(b.cohort(SITES, 3)).toEqual({ sites: ['s1', 's2', 's3'], leftOut: ['s4', 's5'], short: false });
    // Room for one: s5 (most failures) sits out; s4 stays, and failed once only: no escalation.
    expect(b.cohort(SITES, 4)).toEqual({ sites: ['s1', 's2', 's3', 's4'], leftOut: ['s5'], short: false });
    // No room: s5, which failed every round, stays in, and the caller escalates.
    expect(b.cohort(SITES, 5)).toEqual({ sites: SITES, leftOut: [], short: true });
    // Only eligible sites are left out.
    expect(b.cohort(['s1', 's2', 's3', 's5'], 3)).toEqual({
      sites: ['s1', 's2', 's3'],
      leftOut: ['s5'],
      short: false,
    });
    // Fewer eligible than needed anyway: shrinking is not what falls short.
    expect(b.cohort(['s1', 's5'], 3)).toEqual({ sites: ['s1', 's5'], leftOut: [], short: false });
    expect(b.dropsOptionalWork).toBe(false);
  });

  it('escalates one level at a time up to frozen', () => {
    const b = new CircuitBreaker(SETTINGS);
    expect(b.escalate(7, 'why', 10)).toMatchObject({ from: 0, to: 1, round: 7, reason: 'why', atMs: 10 });
    expect(b.escalate(7, 'why', 10)).toMatchObject({ from: 1, to: 2 });
    expect(b.dropsOptionalWork).toBe(true);
    expect(b.escalate(8, 'why', 20)).toMatchObject({ from: 2, to: 3 });
    expect(b.escalate(9, 'why', 30)).toBeUndefined();
    expect(b.state()).toMatchObject({ level: 3, transitions: 3, probeAtMs: 1020 });
  });

  it('steps down one level after coolDownRounds calm rounds spanning coolDownMs', () => {
    const b = new CircuitBreaker(SETTINGS);
    for (let r = 1; r <= 3; r++) b.observe(outcome(r, ['s1', 's2']), 0); // 6/15 = 0.4 → drop-optional
    expect(b.level).toBe(2);
    b.observe(outcome(4, []), 100); // 4/15: below 0.4 (calm 1)
    expect(b.observe(outcome(5, []), 200)).toBeUndefined(); // 2/15: calm 2, but only 100 ms
    expect(b.level).toBe(2);
    const down = b.observe(outcome(6, []), 1100); // 0/15: calm 3 over 1000 ms
    expect(down).toMatchObject({ from: 2, to: 1, round: 6, share: 0 });
    expect(down!.reason).toMatch(/below 0\.4 for 3 round\(s\) and 1000 ms/);
    // A fresh cool-down for the next step.
    expect(b.observe(outcome(7, []), 1200)).toBeUndefined();
    expect(b.observe(outcome(8, []), 2200)).toMatchObject({ from: 1, to: 0 });
  });

  it('restarts the cool-down when a round is not calm', () => {
    const b = new CircuitBreaker({ ...SETTINGS, window: 1 });
    b.observe(outcome(1, ['s1']), 0); // 0.2 → shrink
    b.observe(outcome(2, []), 0); // calm 1
    b.observe(outcome(3, ['s2']), 5000); // 0.2 again: not calm
    expect(b.observe(outcome(4, []), 6000)).toBeUndefined(); // calm 1 again
    expect(b.observe(outcome(5, []), 7000)).toMatchObject({ from: 1, to: 0 });
  });

  it('frozen: waits coolDownMs, probes once, stays frozen after a failed probe, steps down after a good one', () => {
    const b = new CircuitBreaker({ ...SETTINGS, window: 1 });
    b.observe(outcome(1, ['s1', 's2', 's3', 's4']), 1000); // 0.8 → frozen at 1000
    expect(b.probeDue(1999)).toBe(false);
    expect(b.probeDue(2000)).toBe(true);
    // A round decided while frozen that is not the probe (a rollback) changes nothing.
    expect(b.observe(outcome(2, []), 2000)).toBeUndefined();
    expect(b.level).toBe(3);
    b.beginProbe();
    expect(b.probing).toBe(true);
    expect(b.probeDue(5000)).toBe(false);
    // Probe: committed but 3/5 failing (≥ freezeAt): frozen for another coolDownMs.
    expect(b.observe(outcome(3, ['s3', 's4', 's5']), 2500)).toBeUndefined();
    expect(b.state()).toMatchObject({ level: 3, probing: false, probeAtMs: 3500 });
    expect(b.probeDue(3499)).toBe(false);
    b.beginProbe();
    // Probe aborted with nobody failing (e.g. too few contributions): not good enough.
    expect(b.observe(outcome(4, [], false), 3600)).toBeUndefined();
    expect(b.level).toBe(3);
    b.beginProbe();
    // Probe committed, 1/5 failing: drop-optional, and the window restarts from the probe.
    const t = b.observe(outcome(5, ['s5']), 4700);
    expect(t).toMatchObject({ from: 3, to: 2, round: 5 });
    expect(t!.reason).toMatch(/probe round 5 committed with a failing share of 0\.200/);
    expect(b.state()).toMatchObject({ level: 2, rounds: 1, failing: ['s5'], probeAtMs: null });
    expect(b.share()).toBeCloseTo(0.2, 12);
  });

  it('does not shrink the probe round, and a cancelled probe waits coolDownMs again', () => {
    const b = new CircuitBreaker({ ...SETTINGS, window: 1 });
    b.observe(outcome(1, ['s1', 's2', 's3']), 0);
    expect(b.level).toBe(3);
    b.beginProbe();
    expect(b.cohort(SITES, 2)).toEqual({ sites: SITES, leftOut: [], short: false });
    expect(b.dropsOptionalWork).toBe(true);
    b.cancelProbe(4000);
    expect(b.probing).toBe(false);
    expect(b.probeDue(4999)).toBe(false);
    expect(b.probeDue(5000)).toBe(true);
  });

  it('disabled: observes nothing and never moves', () => {
    const b = new CircuitBreaker({ ...SETTINGS, enabled: false });
    expect(b.observe(outcome(1, SITES), 0)).toBeUndefined();
    expect(b.escalate(2, 'why', 0)).toBeUndefined();
    expect(b.state()).toMatchObject({ enabled: false, level: 0, rounds: 0 });
  });

  it('maps shares to levels at the thresholds', () => {
    expect([0, 0.19, 0.2, 0.39, 0.4, 0.59, 0.6, 1].map((s) => levelFor(SETTINGS, s))).toEqual([
      0, 0, 1, 1, 2, 2, 3, 3,
    ]);
  });

  it('refuses settings whose thresholds do not increase', () => {
    expect(errorCode(() => new CircuitBreaker({ ...SETTINGS, dropOptionalAt: 0.2 }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(errorCode(() => new CircuitBreaker({ ...SETTINGS, window: 0 }))).toBe('INVALID_ARGUMENT');
  });
});

describe('round.breaker configuration', () => {
  const base = {
    federation: { id: 'f' },
    members: {
      coordinator: 'c',
      aggregators: [{ id: 'a' }],
      sites: [{ id: 's' }],
      registry: { path: 'registry.bin', sha256: '0'.repeat(64) },
    },
  };

  it('defaults to an enabled breaker at 0.2 / 0.4 / 0.6 over 5 rounds', () => {
    const cfg = parseConfig(base);
    expect(cfg.round.breaker).toEqual({
      enabled: true,
      window: 5,
      shrinkAt: 0.2,
      dropOptionalAt: 0.4,
      freezeAt: 0.6,
      coolDownRounds: 3,
      coolDownMs: 60_000,
    });
  });

  it('names the field of thresholds that do not increase, and refuses unknown keys', () => {
    const issue = (breaker: object) => {
      try {
        parseConfig({ ...base, round: { breaker } });
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(issue({ shrinkAt: 0.5, dropOptionalAt: 0.4 })).toMatch(
      /round\.breaker\.dropOptionalAt: must be above shrinkAt/,
    );
    expect(issue({ freezeAt: 0.3 })).toMatch(/round\.breaker\.freezeAt: must be above dropOptionalAt/);
    expect(issue({ shrinkAt: 0 })).toMatch(/round\.breaker\.shrinkAt/);
    expect(issue({ windows: 3 })).toMatch(/round\.breaker/);
    expect(issue({ freezeAt: 0.9, coolDownMs: 0 })).toBe('accepted');
  });
});
