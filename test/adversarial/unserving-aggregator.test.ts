// An aggregator that never serves: its own service runs with its real keys and NATS user, but every
// partial it sends is spoiled (a byte flipped: refused by the coordinator), then, once it was
// struck and readmitted, it sends none. Before the fix it was never struck and kept its sites, the
// breaker counted those honest sites as failing every round and left them out (one hostile
// aggregator shrank the federation, and at a larger share froze it). Now it is struck like a silent
// voter, its sites go to the other aggregator, and the breaker does not count them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { startAggregator } from '../../src/services/aggregator/index.ts';
import type { CoordinatorEvent, RoundSummary } from '../../src/services/coordinator/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { AttackLedger, holds, honestRoundsCommit } from './attack-ledger.ts';
import { tamperedMember } from './tampered-member.ts';

const F = 'unserving';
const HOSTILE = 'agg-2';
const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 3000,
    voteTimeoutMs: 4000,
    minContributors: 2,
    breaker: { window: 3 }, // the default thresholds: 0.2 of the sites failing shrinks the cohort
  },
  learning: { model: 'logreg', trainLimit: 500, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

const ledger = new AttackLedger('unserving-aggregator', [
  'Item',
  'Attack by an aggregator (its own keys, its own service)',
  'Outcome',
]);

describe('an aggregator whose partial is refused, or that sends none', () => {
  let f: Federation;
  let mode: 'spoil' | 'silent' | 'serve' = 'spoil';
  const events: CoordinatorEvent[] = [];
  const decided: RoundSummary[] = [];

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 2, sites: 4, overrides: OVERRIDES });
    await f.startAggregator('agg-1');
    const own = await f.member(HOSTILE);
    const partial = own.subjects.partial(HOSTILE);
    const hostile = await startAggregator(
      tamperedMember(own, (subject, data) => {
        if (subject !== partial || mode === 'serve') return data;
        if (mode === 'silent') return null;
        const spoiled = data.slice();
        spoiled[spoiled.length - 1]! ^= 1;
        return spoiled;
      }),
    );
    afterAllStops.push(() => hostile.stop());
    for (const site of f.dep.sites) await f.startAgent(site);
    f.startCoordinator({
      rounds: 100_000, // until the test stops it
      switchWaitMs: 1500,
      graceMs: 500,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'decision') decided.push(e.summary);
      },
    });
  }, 120_000);

  /** The hostile aggregator's strikes as the decision of `round` records them (0: not struck). */
  const strikesAt = async (round: number) =>
    (await f.decisions())
      .find((d) => d.round === round)
      ?.exclusions.find((x) => x.site === HOSTILE && x.excluded)?.strikes ?? 0;

  const afterAllStops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of afterAllStops) await stop();
    await f?.stop();
  });

  const excluded = (why: RegExp) =>
    events.find(
      (e): e is Extract<CoordinatorEvent, { type: 'excluded' }> =>
        e.type === 'excluded' && e.member === HOSTILE && why.test(e.reason),
    );
  const breakerMoved = () => events.some((e) => e.type === 'breaker');
  const honestStruck = () => events.some((e) => e.type === 'excluded' && e.member !== HOSTILE);
  const opensAfter = (round: number) =>
    events.filter(
      (e): e is Extract<CoordinatorEvent, { type: 'round-open' }> =>
        e.type === 'round-open' && e.round > round,
    );

  it('a spoiled partial: refused, the aggregator struck, its sites re-routed; the breaker stays closed', async () => {
    await waitFor('agg-2 struck for its partial', () => excluded(/^partial: /) !== undefined, 120_000);
    const struck = excluded(/^partial: /)!;
    await waitFor('a commit after it', () => decided.some((d) => d.round > struck.round && d.commit), 60_000);
    const next = opensAfter(struck.round)[0]!;
    ledger.record(4, 'every partial it sends has one byte flipped (refused by the coordinator)', [
      holds(
        'struck in the round its partial was refused (the decision’s exclusion table)',
        (await strikesAt(struck.round)) === 1,
      ),
      holds(
        'its sites go to the other aggregator in the next round',
        next.assignments.every((a) => a.aggregator !== HOSTILE),
      ),
      holds('the circuit breaker does not move: its sites are not counted as failing', !breakerMoved()),
      holds('no honest member is struck', !honestStruck()),
      honestRoundsCommit(true),
    ]);
  }, 180_000);

  it('no partial at all: struck again once readmitted; the breaker stays closed', async () => {
    mode = 'silent';
    await waitFor(
      'agg-2 struck for sending nothing',
      () => excluded(/sent no partial/) !== undefined,
      180_000,
    );
    const struck = excluded(/sent no partial/)!;
    await waitFor('a commit after it', () => decided.some((d) => d.round > struck.round && d.commit), 60_000);
    ledger.record(4, 'after its sit-out, it sends no partial at all', [
      holds('struck again (“sent no partial”), its sit-out doubled', (await strikesAt(struck.round)) === 2),
      holds(
        'its sites go to the other aggregator in the next round',
        opensAfter(struck.round)[0]!.assignments.every((a) => a.aggregator !== HOSTILE),
      ),
      holds('the circuit breaker does not move', !breakerMoved()),
      holds('no honest member is struck', !honestStruck()),
      honestRoundsCommit(true),
    ]);
  }, 240_000);

  it('serving again: once its partial is in a committed round its strikes are cleared', async () => {
    mode = 'serve';
    const servedAt = () =>
      decided.find(
        (d) =>
          d.commit &&
          opensAfter(d.round - 1)[0]?.round === d.round &&
          opensAfter(d.round - 1)[0]!.assignments.some((a) => a.aggregator === HOSTILE),
      );
    await waitFor('a committed round agg-2 served', () => servedAt() !== undefined, 180_000);
    const served = servedAt()!;
    await waitFor('the decision after it', () => decided.some((d) => d.round > served.round), 60_000);
    // Credited like a YES voter: a false strike costs one sit-out, not a doubling series.
    expect(await strikesAt(served.round)).toBe(0);
    expect(
      (await f.decisions()).find((d) => d.round === served.round)?.exclusions.some((x) => x.site === HOSTILE),
    ).toBe(false);
  }, 240_000);

  it('the attack table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});
