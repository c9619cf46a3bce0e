// A voter that cannot read what it needs abstains (docs/round-protocol.md, "Abstaining"): four
// real site agents, one a `cohort agent` process whose stores do not answer at PREPARE of round 2
// (failpoint `agent.prepare-unavailable@2:skip`, raised as a STORE_UNAVAILABLE after the retries).
// Before, its vote was a NO: round 2 aborted, and the site was struck for a store's hiccup. Now
// round 2 commits on the three YES, the abstention is logged with the decision (the history
// accepts a COMMIT that counts it), nobody is struck, and the site votes YES again in round 3.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openControl } from '../../src/protocol/index.ts';
import { logregOverrides } from '../helpers/e2e-overrides.ts';
import { Federation } from '../helpers/federation.ts';

const F = 'abstain';

describe('a voter whose stores do not answer abstains; the round commits without striking it', () => {
  let f: Federation;
  beforeAll(async () => {
    f = await Federation.create(F, {
      aggregators: 1,
      sites: 4,
      overrides: logregOverrides(),
    });
    await f.startAggregator(f.dep.aggregators[0]!);
    for (const s of ['site-1', 'site-2', 'site-3']) await f.startAgent(s);
    await f.agentProcessInstead('site-4', 'agent.prepare-unavailable@2:skip');
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('round 2 commits on three YES and an abstention; site-4 is not struck and votes YES in round 3', async () => {
    const summary = await f.runCoordinator(3);
    expect(summary.rounds.map((r) => [r.round, r.commit, r.reason])).toEqual([
      [1, true, ''],
      [2, true, ''],
      [3, true, ''],
    ]);
    const decisions = await f.decisions();
    const d2 = decisions.find((d) => d.round === 2)!;
    expect(d2.voters).toEqual(['site-1', 'site-2', 'site-3', 'site-4']);
    expect(d2.exclusions.filter((x) => x.site === 'site-4')).toEqual([]);
    // Its logged vote is the abstention, with what it could not read.
    const batch = (await f.logEntries()).find((e) => e.record.votes?.round === 2)!.record.votes!;
    const mine = batch.votes.find((v) => v.member === 'site-4')!;
    const body = openControl(mine.envelope, 'vote', f.coord.keys).body;
    expect(body).toMatchObject({ yes: false, abstain: true });
    expect(body.reason).toMatch(/STORE_UNAVAILABLE|cannot read round 2/);
    // Round 3: site-4 caught up (it never prepared round 2: it replayed it) and voted YES like the
    // others, on the same candidate.
    const d3 = decisions.find((d) => d.round === 3)!;
    expect(d3.voters).toEqual(['site-1', 'site-2', 'site-3', 'site-4']);
    const batch3 = (await f.logEntries()).find((e) => e.record.votes?.round === 3)!.record.votes!;
    const vote3 = openControl(
      batch3.votes.find((v) => v.member === 'site-4')!.envelope,
      'vote',
      f.coord.keys,
    );
    expect(vote3.body.yes).toBe(true);
  }, 240_000);
});

describe('abstaining is no free veto: sites that abstain every round where others vote YES are struck', () => {
  let f: Federation;
  beforeAll(async () => {
    f = await Federation.create('abstain-veto', {
      aggregators: 1,
      sites: 4,
      // Two of four sites hold shares enough to decrypt once the abstainers are excluded.
      overrides: logregOverrides({ minContributors: 2 }, { crypto: { threshold: { sites: 2 } } }),
    });
    await f.startAggregator(f.dep.aggregators[0]!);
    for (const s of ['site-1', 'site-2']) await f.startAgent(s);
    for (const s of ['site-3', 'site-4']) await f.agentProcessInstead(s, 'agent.prepare-unavailable:skip');
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
  });

  it('round 1 fails for want of a YES majority, the two abstainers are struck, round 2 commits without them', async () => {
    const summary = await f.runCoordinator(2);
    const [r1, r2] = summary.rounds;
    expect(r1).toMatchObject({ round: 1, commit: false });
    expect(r1!.reason).toMatch(/^2 of 4 voters voted YES .*abstained: site-3, site-4/);
    const d1 = (await f.decisions()).find((d) => d.round === 1)!;
    expect(d1.exclusions.filter((x) => x.excluded).map((x) => x.site)).toEqual(['site-3', 'site-4']);
    expect(r2).toMatchObject({ round: 2, commit: true });
    const d2 = (await f.decisions()).find((d) => d.round === 2)!;
    expect(d2.voters).toEqual(['site-1', 'site-2']);
  }, 240_000);
});
