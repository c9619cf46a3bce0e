// End to end with differential privacy on (docs/privacy.md): the real coordinator, aggregators and
// site agents over a real nats-server in `he` mode. Every site clips its update, rounds it to
// integers and adds its Skellam share before encrypting; every commit records the ε spent, which
// every site recomputes and would vote NO on; the coordinator opens no round that could pass the
// budget, counting from the log after a restart. The budget here admits exactly two rounds; a site
// that misses the second catches up by replaying it to the same model and the same ε.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTEGER_RDP_ORDERS, RdpLedger } from '../../federation/privacy/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { RMS_BUCKETS } from '../../src/protocol/index.ts';
import { decodeRoundParams, modelSpecFor } from '../../src/round/index.ts';
import { roundCharge, servicePrivacy } from '../../src/services/privacy-plan.ts';
import { e2eOverrides } from '../helpers/e2e-overrides.ts';
import { expectSingleChain, Federation, hex, waitFor } from '../helpers/federation.ts';

const NOISE_MULTIPLIER = 0.8;

const OVERRIDES = e2eOverrides({ minContributors: 3 });

describe('differential privacy end to end (he mode, real nats-server)', () => {
  let f: Federation;
  let budget: number;
  let perRound: (contributors: number) => ReturnType<typeof roundCharge>;
  let lanes: number;

  beforeAll(async () => {
    // The budget: one round of 4 sites and one of 3 (round.minContributors, the worst case) fit;
    // after those, the worst case of a third does not.
    const probe = await Federation.create('dpprobe', { aggregators: 1, sites: 4, overrides: withPrivacy(1) });
    const privacy = servicePrivacy(probe.dep.config, modelSpecFor(probe.dep.config))!;
    await probe.stop();
    perRound = (k) => roundCharge(privacy, k);
    // The parameters' digits, then the RMS histogram (left empty under privacy).
    lanes = privacy.plan.settings.dimension * privacy.digits + RMS_BUCKETS;
    expect(privacy.digits).toBeGreaterThanOrEqual(2); // level + noise + offset needs more than 8 bits
    budget = spend([4, 3]) * (1 + 1e-9);
    expect(spend([4, 3, 3])).toBeGreaterThan(budget);
    f = await Federation.create('e2edp', { aggregators: 2, sites: 4, overrides: withPrivacy(budget) });
    for (const a of f.dep.aggregators) await f.startAggregator(a);
    for (const s of f.dep.sites) await f.startAgent(s);
  }, 60_000);
  afterAll(async () => {
    await f?.stop();
  });

  function withPrivacy(epsilon: number): Partial<CohortConfigInput> {
    return {
      ...OVERRIDES,
      privacy: { epsilon, delta: 1e-5, noiseMultiplier: NOISE_MULTIPLIER, clipNorm: 1 },
    };
  }

  /** ε after rounds of these contributor counts, counted here with the accountant itself. */
  function spend(counts: readonly number[]): number {
    const ledger = new RdpLedger({ delta: 1e-5, orders: INTEGER_RDP_ORDERS });
    for (const k of counts) ledger.charge(perRound(k));
    return ledger.spent().epsilon;
  }

  it('commits until the budget, records ε with each commit, and every site reports the same ε', async () => {
    // Round 1 with four sites; then site-4 stops and a new coordinator runs round 2 with three,
    // counting from what the log's commits recorded, not from zero.
    const first = await f.runCoordinator(1);
    expect(first.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([[1, true, 4]]);
    expect(first.privacy).toEqual({ epsilon: spend([4]), delta: 1e-5, budgetSpent: false });
    for (const agent of f.agents.values()) {
      expect(agent.stats().privacy).toEqual({ epsilon: spend([4]), delta: 1e-5 });
    }
    const away = f.dep.sites[3]!;
    await f.agents.get(away)!.stop();
    f.agents.delete(away);

    const budgetEvents: { round: number; epsilon: number }[] = [];
    const summary = await f.runCoordinator(5, (e) => {
      if (e.type === 'privacy-budget') budgetEvents.push({ round: e.round, epsilon: e.epsilon });
    });
    expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([[2, true, 3]]);
    const entries = await f.decisions();
    expectSingleChain(entries, f.genesis);
    // Every round carried private levels: each parameter as the digits of its noised integer, then
    // the RMS histogram lanes.
    const opens = (await f.logEntries()).flatMap((e) => (e.record.roundOpen ? [e.record.roundOpen] : []));
    expect(opens.map((o) => [o.round, o.totalParams])).toEqual([
      [1, lanes],
      [2, lanes],
    ]);

    // The head commit records what both rounds spent, as the accountant counts it (round 2's record
    // is round 1's plus a round of 3: each site checked it before voting YES).
    const last = entries.at(-1)!;
    const head = f.agents.get(f.dep.sites[0]!)!.head()!;
    expect(hex(head.hash)).toBe(hex(last.commitHash));
    const recorded = decodeRoundParams(head.params).privacy!;
    expect(recorded).toMatchObject({
      contributors: 3,
      noiseMultiplier: NOISE_MULTIPLIER,
      clipNorm: 1,
      noiseShares: 3,
    });
    expect(recorded.epsilon).toBe(spend([4, 3]));
    expect(recorded.epsilon).toBeLessThanOrEqual(budget);

    // The coordinator stopped before a third round could pass the budget.
    expect(budgetEvents).toEqual([{ round: 3, epsilon: recorded.epsilon }]);
    expect(summary.privacy).toEqual({ epsilon: recorded.epsilon, delta: 1e-5, budgetSpent: true });

    // site-4 comes back and catches up by replaying round 2 (decrypt, carry the digits, average):
    // its model hashes to the committed one, and it counts the same ε.
    const back = await f.startAgent(away);
    await waitFor(
      'site-4 at the head',
      () => back.head() !== null && hex(back.head()!.hash) === hex(last.commitHash),
      30_000,
    );
    expect(back.stats()).toMatchObject({ replayed: 1, fatal: null });

    // Every site is on the last commit and reports, by its own count, the same ε.
    for (const [id, agent] of f.agents) {
      expect({ id, head: hex(agent.head()!.hash) }).toEqual({ id, head: hex(last.commitHash) });
      expect({ id, privacy: agent.stats().privacy }).toEqual({
        id,
        privacy: { epsilon: recorded.epsilon, delta: 1e-5 },
      });
      expect(agent.stats().votesNo).toBe(0);
    }
  });
});
