// Regressions of what the structure-aware fuzzer (test/adversarial/fuzz-live.test.ts) found, each a
// focused reproduction that failed before its fix. (Its other finding, an envelope without body or
// signature refused as INVALID_ARGUMENT, is a unit test in test/protocol/control.test.ts.)
import { afterAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { openControl, sealControl } from '../../src/protocol/index.ts';
import { type AgentService, startAgent } from '../../src/services/agent/index.ts';
import type { RoundSummary } from '../../src/services/coordinator/index.ts';
import type { MemberContext } from '../../src/services/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { tamperedMember } from './tampered-member.ts';

describe('fuzzer findings', () => {
  // Fuzzer run: `vote` of site-5, "modelHash: other-round (32 → 32 bytes)", re-signed with
  // site-5's own key, sent before site-5's own vote → accepted; the round aborted with "votes name
  // different model hashes" and its decision struck no one (`judgeVotes` aborts on a YES that names
  // another commit hash, model hash, strategy state or evaluation totals than the first YES, and
  // `decide` strikes only NO voters, silent voters and culprits). So one site can abort every round
  // it votes in, for ever: it stays a voter, and the circuit breaker does not count it either.
  // Now the YES voters outside a strict majority of the candidate are struck like NO voters
  // (round-judge.ts `deviants`), and honest rounds commit again once the liar is out.
  describe('a site whose YES votes name another model hash', () => {
    let f: Federation | undefined;
    let agent: AgentService | undefined;
    afterAll(async () => {
      await agent?.stop();
      await f?.stop();
    });

    it('is struck, and honest rounds commit again', async () => {
      const overrides: Partial<CohortConfigInput> = {
        round: { heartbeatMs: 200, missedHeartbeats: 5, deadlineMs: 6000, voteTimeoutMs: 6000 },
        learning: { model: 'logreg', trainLimit: 800, testLimit: 100, epochs: 1, batchSize: 20 },
        log: { level: 'error' },
      };
      f = await Federation.create('fuzzfind', { aggregators: 1, sites: 4, overrides });
      await f.startAggregator('agg-1');
      for (const site of ['site-1', 'site-2', 'site-3']) await f.startAgent(site);
      // site-4 runs its own agent, but every YES it sends names a model hash one bit off.
      const own = await f.member('site-4');
      agent = await startAgent(lyingVotes(own));
      const decided: RoundSummary[] = [];
      f.startCoordinator({
        rounds: 100_000, // until the test stops it
        switchWaitMs: 2000,
        onEvent: (e) => {
          if (e.type === 'decision') decided.push(e.summary);
        },
      });
      await waitFor('six decided rounds', () => decided.length >= 6, 120_000);
      const decisions = await f.decisions();
      const struck = decisions.flatMap((d) => d.exclusions.map((x) => x.site));
      expect(struck, 'site-4 is struck').toContain('site-4');
      expect(
        struck.filter((s) => s !== 'site-4'),
        'no honest site is struck',
      ).toEqual([]);
      const deviated = decided.filter((d) => /site-4 against the majority/.test(d.reason)).length;
      expect(deviated, 'every round site-4 votes in names it').toBeGreaterThan(0);
      expect(
        decided.slice(-2).some((d) => d.commit),
        'a round commits after site-4 is struck',
      ).toBe(true);
    }, 180_000);
  });
});

/** `ctx` whose YES votes name another model hash (one bit flipped), re-signed with its own key. */
function lyingVotes(ctx: MemberContext): MemberContext {
  return tamperedMember(ctx, (subject, data) => {
    if (subject !== ctx.subjects.vote(ctx.member)) return data;
    const vote = openControl(data, 'vote', ctx.keys, { signer: ctx.member }).body;
    if (!vote.yes || vote.modelHash.length === 0) return data;
    const modelHash = vote.modelHash.slice();
    modelHash[0]! ^= 1;
    return sealControl('vote', { ...vote, modelHash }, ctx.member, ctx.signing);
  });
}
