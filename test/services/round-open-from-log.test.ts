// Announcements are at most once: a RoundOpen broadcast lost (a server restart, a partition) used
// to make the site sit the round out, and be struck as a silent voter when the round counted on
// it. The RoundOpen is in the log before it is announced, so a site that polls the log while idle
// takes the round up from there. Four real site agents; one, a `cohort agent` process, never
// receives round 2's broadcast (failpoint `agent.round-open-lost@2:skip`), and must still
// contribute to round 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logregOverrides } from '../helpers/e2e-overrides.ts';
import { Federation, waitFor } from '../helpers/federation.ts';

describe('a site that missed a RoundOpen broadcast takes the round up from the log', () => {
  let f: Federation;
  beforeAll(async () => {
    f = await Federation.create('openlog', {
      aggregators: 1,
      sites: 4,
      // The site polls the log every decision timeout while idle.
      overrides: logregOverrides({}, { history: { decisionTimeoutMs: 1500 } }),
    });
    await f.startAggregator(f.dep.aggregators[0]!);
    for (const s of ['site-1', 'site-2', 'site-3']) await f.startAgent(s);
    await f.agentProcessInstead('site-4', 'agent.round-open-lost@2:skip');
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('round 2 counts the update of the site that never heard it announced', async () => {
    const summary = await f.runCoordinator(3);
    expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([
      [1, true, 4],
      [2, true, 4],
      [3, true, 4],
    ]);
    const d2 = (await f.decisions()).find((d) => d.round === 2)!;
    expect(d2.aggregate!.contributors.map((c) => c.site)).toContain('site-4');
    const site4 = f.processes.get('site-4')!;
    expect(site4.logged('round open in the log, never announced here: taking part', { round: 2 })).toBe(true);
  }, 240_000);
});

describe('an aggregator that missed a RoundOpen broadcast opens the round from the log', () => {
  let f: Federation;
  beforeAll(async () => {
    f = await Federation.create('aggopenlog', {
      aggregators: 1,
      sites: 3,
      overrides: logregOverrides(),
    });
    const agg = f.spawn('aggregator', 'agg-1', ['--set', 'log.level=info'], {
      COHORT_FAILPOINT: 'aggregator.round-open-lost@2:skip',
    });
    await waitFor('agg-1 up', () => agg.logged('aggregator started'), 120_000);
    for (const s of ['site-1', 'site-2', 'site-3']) await f.startAgent(s);
  }, 180_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('round 2 sums every site: the first update makes the aggregator read the RoundOpen from the log', async () => {
    const summary = await f.runCoordinator(3);
    expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([
      [1, true, 3],
      [2, true, 3],
      [3, true, 3],
    ]);
    const agg = f.processes.get('agg-1')!;
    expect(agg.logged('round open in the log, never announced here: collecting', { round: 2 })).toBe(true);
  }, 240_000);
});
