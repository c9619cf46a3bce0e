// A hostile site writes a wrong aggregate-MAC tag in every round it takes part in (issue 22, break
// 4): every decrypting site, itself included, finds the aggregate's MAC wrong and votes NO. Every
// partial is the exact sum of what it lists, so no aggregator is at fault and no one can tell from
// the sum which contributor lied; the coordinator narrows the suspects by halves (group testing)
// until the hostile site is the only one left, and names and strikes it. Honest sites are never
// struck, and rounds without it commit meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AggregateMacKey } from '../../crypto/mac/index.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { DecisionBody } from '../../src/protocol/index.ts';
import type { CoordinatorHandle, RoundSummary } from '../../src/services/coordinator/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { AttackLedger, holds } from './attack-ledger.ts';

const F = 'wrongtag';
const HOSTILE = 'site-6';
const SITES = 6;
const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 8000,
    voteTimeoutMs: 8000,
    minContributors: 3,
    quorum: SITES + 2,
  },
  learning: { model: 'logreg', trainLimit: 800, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

const ledger = new AttackLedger('wrong-tag', ['Item', 'Attack by a site (its own keys)', 'Outcome']);

describe('a site that writes wrong MAC tags', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  const decided: RoundSummary[] = [];
  const hostileKey = AggregateMacKey.random();

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 2, sites: SITES, overrides: OVERRIDES });
    for (const a of f.dep.aggregators) await f.startAggregator(a);
    for (const site of f.dep.sites) {
      // The hostile site tags (and checks) with a key no other site holds.
      await f.startAgent(site, false, site === HOSTILE ? { macKeyOverride: hostileKey } : {});
    }
    coordinator = f.startCoordinator({
      rounds: 10_000,
      switchWaitMs: 1500,
      onEvent: (e) => {
        if (e.type === 'decision') decided.push(e.summary);
      },
    });
  }, 120_000);

  afterAll(async () => {
    await f?.stop();
    hostileKey.delete();
  });

  it('4: it is isolated by halves and struck; honest sites never are; rounds go on', async () => {
    const named = async () =>
      (await f.decisions()).find((d) =>
        d.culprits.some((c) => c.member === HOSTILE && c.fault === 'ISOLATED'),
      );
    let culpritDecision: DecisionBody | undefined;
    await waitFor(
      'the hostile site named',
      async () => {
        culpritDecision = await named();
        return culpritDecision !== undefined;
      },
      300_000,
    );
    const isolatedAt = culpritDecision!.round;
    // Rounds after it commit (it sits out).
    await waitFor(
      'a commit after it was named',
      () => decided.some((d) => d.round > isolatedAt && d.commit),
      120_000,
    );
    await coordinator.stop();
    const decisions = await f.decisions();
    const upTo = decisions.filter((d) => d.round <= isolatedAt);
    const spoiled = upTo.filter((d) => !d.commit && d.reason.includes('BLOCK_MAC_MISMATCH'));
    // Each spoiled round holds the hostile site (its partials exact), and no aggregator is blamed.
    const blamed = decisions.flatMap((d) => d.culprits);
    const honestStruck = decisions.flatMap((d) =>
      d.exclusions.filter(
        (x) => x.site !== HOSTILE && x.sinceRound === d.round && !d.commit && d.reason.includes('MAC'),
      ),
    );
    const bound = Math.ceil(Math.log2(SITES)) + 1;
    const without = decisions.filter(
      (d) => d.aggregate !== null && !d.aggregate.contributors.some((c) => c.site === HOSTILE),
    );
    ledger.record(
      4,
      'write a wrong aggregate-MAC tag in every round it takes part in, and vote NO like the honest sites',
      [
        holds('every round it spoils aborts with every voter BLOCK_MAC_MISMATCH', spoiled.length > 0),
        holds(
          'no aggregator is blamed (every partial is the exact sum of what it lists)',
          blamed.every((c) => c.member === HOSTILE),
        ),
        holds('no honest site is struck for it', honestStruck.length === 0),
        holds(
          `it is named ISOLATED and struck after at most ⌈log₂ ${SITES}⌉ + 1 = ${bound} spoiled rounds`,
          spoiled.length <= bound,
        ),
        holds(
          'every round whose aggregate does not hold its update commits',
          without.length > 0 && without.every((d) => d.commit),
        ),
      ],
    );
    expect(culpritDecision!.exclusions.find((x) => x.site === HOSTILE)?.excluded).toBe(true);
    expect(decided.some((d) => d.round > isolatedAt && d.commit)).toBe(true);
  }, 600_000);

  it('the attack table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});
