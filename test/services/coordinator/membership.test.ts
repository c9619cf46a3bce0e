import { describe, expect, it } from 'vitest';
import { sha256 } from '../../../crypto/digest/index.ts';
import type { ExclusionRecord } from '../../../src/protocol/index.ts';
import type { MemberRoleName } from '../../../src/services/coordinator/events.ts';
import {
  type HeadRef,
  MAX_SIT_OUT_ROUNDS,
  Membership,
  sitOutRounds,
} from '../../../src/services/coordinator/membership.ts';

const H = (text: string) => sha256(new TextEncoder().encode(text));
const HEAD0: HeadRef = { hash: H('head 0'), height: 0 };
const HEAD1: HeadRef = { hash: H('head 1'), height: 1 };
const HEAD2: HeadRef = { hash: H('head 2'), height: 2 };
const WINDOW = 3000;

const roles = new Map<string, MemberRoleName>([
  ['site-a', 'site'],
  ['site-b', 'site'],
  ['site-c', 'site'],
  ['site-z', 'site'],
  ['agg-1', 'aggregator'],
  ['agg-2', 'aggregator'],
]);

/** A membership on a hand-driven clock. */
function setup(start = 10_000) {
  const clock = { t: start };
  const m = new Membership(roles, WINDOW, () => clock.t);
  const beat = (id: string, head: HeadRef = HEAD0, examples = 100) =>
    m.heartbeat(id, roles.get(id) ?? 'site', {
      examples,
      head: head.hash,
      height: head.height,
      state: 'READY',
    });
  return { m, clock, beat };
}

const record = (site: string, over: Partial<ExclusionRecord> = {}): ExclusionRecord => ({
  site,
  strikes: 1,
  sinceRound: 5,
  atHeight: 1,
  excluded: true,
  ...over,
});

describe('sitOutRounds', () => {
  it('doubles with each strike in a row, from 1, up to MAX_SIT_OUT_ROUNDS', () => {
    expect(MAX_SIT_OUT_ROUNDS).toBe(64);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8, 50].map(sitOutRounds)).toEqual([1, 1, 2, 4, 8, 16, 32, 64, 64, 64]);
  });
});

describe('Membership liveness', () => {
  it('counts a member live for the window after its last heartbeat, and reports (re)joins', () => {
    const { m, clock, beat } = setup();
    expect(m.isLive('site-a')).toBe(false);
    expect(beat('site-a')).toEqual({ joined: true });
    expect(beat('site-a')).toEqual({ joined: false });
    clock.t += WINDOW; // exactly the window: still live
    expect(m.isLive('site-a')).toBe(true);
    clock.t += 1;
    expect(m.isLive('site-a')).toBe(false);
    expect(m.live('site')).toEqual([]);
    expect(beat('site-a')).toEqual({ joined: true });
    expect(m.view('site-a')?.lastSeen).toBe(10_000 + WINDOW + 1);
  });

  it('lists live members per role, sorted', () => {
    const { m, clock, beat } = setup();
    beat('site-c');
    beat('agg-1');
    clock.t += 2000;
    beat('site-a');
    expect(m.live('site')).toEqual(['site-a', 'site-c']);
    expect(m.live('aggregator')).toEqual(['agg-1']);
    clock.t += 1500; // site-c and agg-1 are 3500 ms old
    expect(m.live('site')).toEqual(['site-a']);
    expect(m.live('aggregator')).toEqual([]);
    expect(m.role('agg-1')).toBe('aggregator');
    expect(m.role('stranger')).toBeUndefined();
  });

  it('keeps what a heartbeat reports, cleaning unusable numbers', () => {
    const { m } = setup();
    m.heartbeat('site-a', 'site', { examples: 250, head: HEAD2.hash, height: 2, state: 'TRAINING' });
    expect(m.view('site-a')).toMatchObject({ role: 'site', examples: 250, height: 2, state: 'TRAINING' });
    expect(m.view('site-a')?.head).toEqual(HEAD2.hash);
    m.heartbeat('site-a', 'site', { examples: Number.NaN, head: HEAD2.hash, height: -1, state: 'READY' });
    expect(m.view('site-a')).toMatchObject({ examples: 0, height: 0 });
    m.heartbeat('site-b', 'site', { examples: -5, head: HEAD0.hash, height: 1.5, state: 'READY' });
    expect(m.view('site-b')).toMatchObject({ examples: 0, height: 0 });
    // An aggregator carries no example weight.
    m.heartbeat('agg-1', 'aggregator', { examples: 99, head: HEAD0.hash, height: 0, state: 'READY' });
    expect(m.view('agg-1')?.examples).toBe(0);
  });

  it('moves a site to the head it switched to; ignores a switch of an unseen member', () => {
    const { m, beat } = setup();
    beat('site-a', HEAD0);
    m.switched('site-a', HEAD1);
    expect(m.atHead('site-a', HEAD1)).toBe(true);
    expect(m.view('site-a')?.height).toBe(1);
    m.switched('site-b', HEAD1);
    expect(m.view('site-b')).toBeUndefined();
  });
});

describe('Membership eligibility and exclusion', () => {
  it('makes a site eligible only when live, reporting the head and not excluded', () => {
    const { m, clock, beat } = setup();
    beat('site-a', HEAD1);
    beat('site-b', HEAD0); // behind: catches up first
    beat('site-c', HEAD1);
    beat('agg-1', HEAD1);
    expect(m.eligibleSites(HEAD1)).toEqual(['site-a', 'site-c']);
    m.adopt([record('site-c')]);
    expect(m.eligibleSites(HEAD1)).toEqual(['site-a']);
    clock.t += WINDOW + 1;
    beat('site-b', HEAD1);
    expect(m.eligibleSites(HEAD1)).toEqual(['site-b']); // site-a fell silent
  });

  it('computes the next table without changing the current one: strikes add up, credits clear', () => {
    const { m } = setup();
    const t1 = m.nextTable({ offenders: ['site-b', 'site-a'], credited: [], round: 3, height: 1 });
    expect(t1).toEqual([
      { site: 'site-a', strikes: 1, sinceRound: 3, atHeight: 1, excluded: true },
      { site: 'site-b', strikes: 1, sinceRound: 3, atHeight: 1, excluded: true },
    ]);
    expect(m.table()).toEqual([]); // pure until adopted
    m.adopt(t1);
    expect(m.excluded()).toEqual(['site-a', 'site-b']);
    expect(m.isExcluded('site-a')).toBe(true);

    // site-a offends again; site-c offends for the first time; site-b is credited (a YES that committed).
    const t2 = m.nextTable({ offenders: ['site-a', 'site-c'], credited: ['site-b'], round: 4, height: 2 });
    expect(t2).toEqual([
      { site: 'site-a', strikes: 2, sinceRound: 4, atHeight: 2, excluded: true },
      { site: 'site-c', strikes: 1, sinceRound: 4, atHeight: 2, excluded: true },
    ]);
    m.adopt(t2);
    expect(m.table()).toEqual(t2);
    expect(m.isExcluded('site-b')).toBe(false);
    // The table is a copy: changing it changes nothing.
    m.table()[0]!.excluded = false;
    expect(m.isExcluded('site-a')).toBe(true);
  });

  it('adopts only records of known sites and aggregators', () => {
    const { m } = setup();
    m.adopt([record('site-a'), record('agg-1'), record('stranger'), record('site-b', { excluded: false })]);
    expect(m.table().map((r) => r.site)).toEqual(['agg-1', 'site-a', 'site-b']);
    expect(m.excluded()).toEqual(['agg-1', 'site-a']);
  });

  it('an aggregator found at fault sits its rounds out, unless no aggregator is left', () => {
    // Struck at round 5 (first strike): sits out round 6, usable again from round 7 when live.
    const { m, beat } = setup();
    beat('agg-1', HEAD1);
    m.adopt(m.nextTable({ offenders: ['agg-1'], credited: [], round: 5, height: 1 }));
    expect(m.usableAggregators()).toEqual([]);
    // No aggregator is usable at all: it is readmitted whatever its sit-out (or no round could run).
    expect(m.readmitAggregators(6)).toEqual(['agg-1']);
    expect(m.usableAggregators()).toEqual(['agg-1']);
    // Struck again (second strike, round 8): sits out rounds 9 and 10 while another serves.
    beat('agg-2', HEAD1);
    m.adopt(m.nextTable({ offenders: ['agg-1'], credited: [], round: 8, height: 1 }));
    expect(m.usableAggregators()).toEqual(['agg-2']);
    expect(m.readmitAggregators(10)).toEqual([]);
    expect(m.readmitAggregators(11)).toEqual(['agg-1']);
    expect(m.usableAggregators()).toEqual(['agg-1', 'agg-2']);
  });

  it('readmits a site only once it reports the head and has sat its rounds out', () => {
    // Excluded at round 5, head height 1, first strike: sits out round 6, back for round 7.
    const { m, beat } = setup();
    m.adopt([record('site-a', { strikes: 1, sinceRound: 5, atHeight: 1 })]);
    beat('site-a', HEAD1);
    beat('site-z', HEAD2); // another eligible site, so no one is readmitted by necessity
    expect(m.readmit('site-a', HEAD2, 7)).toBe(false); // the head moved, the site is still behind
    beat('site-a', HEAD2);
    expect(m.readmit('site-a', HEAD2, 6)).toBe(false); // still sitting out round 6
    expect(m.isExcluded('site-a')).toBe(true);
    expect(m.readmit('site-a', HEAD2, 7)).toBe(true);
    expect(m.isExcluded('site-a')).toBe(false);
    expect(m.eligibleSites(HEAD2)).toEqual(['site-a', 'site-z']);
    // Readmitted, but its strikes stay until a YES in a committed round.
    expect(m.table()).toEqual([{ site: 'site-a', strikes: 1, sinceRound: 5, atHeight: 1, excluded: false }]);
    expect(m.readmit('site-a', HEAD2, 8)).toBe(false); // not excluded any more
    expect(m.readmit('site-b', HEAD2, 8)).toBe(false); // never excluded
  });

  it('makes a site with more strikes sit out more rounds', () => {
    // Third strike in a row at round 10: sits out 4 rounds (11-14), back for round 15.
    const { m, beat } = setup();
    m.adopt([record('site-b', { strikes: 3, sinceRound: 10, atHeight: 1 })]);
    beat('site-b', HEAD2);
    expect(m.readmit('site-b', HEAD2, 14)).toBe(false);
    expect(m.readmit('site-b', HEAD2, 15)).toBe(true);
    // Strikes past the cap sit out MAX_SIT_OUT_ROUNDS rounds.
    m.adopt([record('site-b', { strikes: 40, sinceRound: 10, atHeight: 1 })]);
    expect(m.readmit('site-b', HEAD2, 10 + MAX_SIT_OUT_ROUNDS)).toBe(false);
    expect(m.readmit('site-b', HEAD2, 10 + MAX_SIT_OUT_ROUNDS + 1)).toBe(true);
  });

  it('readmits a NO voter of an aborted round once it sat out, its head being current', () => {
    const { m, beat } = setup();
    m.adopt([record('site-a', { strikes: 1, sinceRound: 5, atHeight: 1 })]);
    beat('site-a', HEAD1);
    beat('site-z', HEAD1);
    expect(m.readmit('site-a', HEAD1, 6)).toBe(false);
    expect(m.readmit('site-a', HEAD1, 7)).toBe(true);
  });

  it('readmits excluded sites at the head at once when no other site is eligible', () => {
    // A federation whose every site is excluded could never run the rounds that count the sit-out.
    const { m, beat } = setup();
    m.adopt([
      record('site-a', { strikes: 3, sinceRound: 5, atHeight: 1 }),
      record('site-b', { sinceRound: 5, atHeight: 1 }),
    ]);
    beat('site-a', HEAD1);
    beat('site-b', HEAD2); // behind
    expect(m.eligibleSites(HEAD1)).toEqual([]);
    expect(m.readmitQualified(HEAD1, 6)).toEqual(['site-a']);
    expect(m.eligibleSites(HEAD1)).toEqual(['site-a']);
    expect(m.excluded()).toEqual(['site-b']);
  });

  it('readmits every qualified site at once, sorted', () => {
    const { m, beat } = setup();
    beat('site-z', HEAD2); // an eligible site: nobody is readmitted by necessity
    m.adopt([
      record('site-c', { sinceRound: 5, atHeight: 1 }),
      record('site-a', { sinceRound: 5, atHeight: 1 }),
      record('site-b', { sinceRound: 5, atHeight: 1 }),
    ]);
    beat('site-a', HEAD2);
    beat('site-b', HEAD1); // not caught up
    beat('site-c', HEAD2);
    expect(m.readmitQualified(HEAD2, 6)).toEqual([]); // still sitting out
    expect(m.readmitQualified(HEAD2, 7)).toEqual(['site-a', 'site-c']);
    expect(m.excluded()).toEqual(['site-b']);
    expect(m.readmitQualified(HEAD2, 7)).toEqual([]);
  });
});
