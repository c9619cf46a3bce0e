// End-to-end: the real coordinator, aggregators and site agents over a real nats-server (JetStream,
// per-member users), as in docs/round-protocol.md. Three federations, each with its own server:
//   1. four agents, two rounds: every round commits and every agent ends on the logged commit;
//   2. an agent that cannot decrypt votes NO: the round aborts, nobody switches, and the next round
//      commits without it;
//   3. an aggregator process is SIGKILLed in round 2: its sites are re-routed to the live
//      aggregator and the decision log stays a single, parent-linked chain.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { CoordinatorSummary } from '../../src/services/coordinator/index.ts';
import { expectSingleChain, Federation, hex, waitFor } from '../helpers/federation.ts';

const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 15_000,
    voteTimeoutMs: 15_000,
    epsilon: 0.25,
    clipMultiplier: 6,
  },
  learning: { model: '2nn', trainLimit: 2000, testLimit: 500, epochs: 1, batchSize: 10, learningRate: 0.1 },
  codec: { bits: 8, clip: 0.02, maxContributors: 32, crcChunkBytes: 16_384 },
  log: { level: 'error' },
};

const create = (name: string) => Federation.create(name, { aggregators: 2, sites: 4, overrides: OVERRIDES });

describe('federation end to end (real services, real nats-server)', () => {
  describe('four agents, two rounds', () => {
    let f: Federation;
    beforeAll(async () => {
      f = await create('e2eok');
      for (const a of f.dep.aggregators) await f.startAggregator(a);
      for (const [i, s] of f.dep.sites.entries()) await f.startAgent(s, i === 0);
    });
    afterAll(async () => {
      await f?.stop();
    });

    it('commits both rounds and every agent ends on the logged commit', async () => {
      /** Each agent's head at the moment the coordinator received its `switched`, by round. */
      const switchedHeads = new Map<number, Map<string, { hash: string; model: string }>>();
      const summary = await f.runCoordinator(2, (e) => {
        if (e.type !== 'switched') return;
        const head = f.agents.get(e.member)!.head()!;
        if (!switchedHeads.has(e.round)) switchedHeads.set(e.round, new Map());
        switchedHeads.get(e.round)!.set(e.member, { hash: hex(head.hash), model: hex(head.modelHash) });
      });

      expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors, r.participants])).toEqual([
        [1, true, 4, 4],
        [2, true, 4, 4],
      ]);
      const entries = await f.decisions();
      expect(entries.map((e) => [e.round, e.commit])).toEqual([
        [1, true],
        [2, true],
      ]);
      expectSingleChain(entries, f.genesis);
      for (const e of entries) expect(e.voters).toEqual([...f.dep.sites]);

      // After each round, every agent switched to exactly the commit and model the log records.
      for (const e of entries) {
        const heads = switchedHeads.get(e.round);
        expect(heads && [...heads.keys()].sort()).toEqual([...f.dep.sites]);
        for (const h of heads!.values()) {
          expect(h).toEqual({ hash: hex(e.commitHash), model: hex(e.modelHash) });
        }
      }
      const last = entries.at(-1)!;
      expect(summary.head).toBe(hex(last.commitHash));
      for (const [id, agent] of f.agents) {
        const head = agent.head()!;
        expect({
          id,
          hash: hex(head.hash),
          model: hex(head.modelHash),
          height: head.height,
          round: head.round,
        }).toEqual({ id, hash: hex(last.commitHash), model: hex(last.modelHash), height: 2, round: 2 });
        expect(agent.stats()).toMatchObject({ commits: 2, aborts: 0, votesNo: 0, roundsTrained: 2 });
        expect(agent.state).toBe('READY');
      }
      // The evaluating agent reported a real accuracy for the committed model.
      expect(summary.testAccuracy).toBeGreaterThan(0.5);
    });
  });

  describe('an agent that cannot decrypt', () => {
    let f: Federation;
    beforeAll(async () => {
      f = await create('e2eno');
      for (const a of f.dep.aggregators) await f.startAggregator(a);
      // site-4's key is garbage: it starts, but cannot encrypt or decrypt (its wrapped CKKS key;
      // under threshold keys, its key file, and the data key that opens the decryption shares).
      const keys = f.dep.config.members!.keysDir;
      const garbage = (path: string) => writeFileSync(path, new Uint8Array(64).fill(7), { mode: 0o600 });
      if (f.dep.config.crypto.keys === 'threshold') {
        garbage(join(keys, 'site-4', 'site-4.threshold'));
        garbage(join(keys, 'public', 'site-4.data.env'));
      } else garbage(join(keys, 'public', 'site-4.ckks.env'));
      for (const s of f.dep.sites) await f.startAgent(s);
    });
    afterAll(async () => {
      await f?.stop();
    });

    it('votes NO: the round aborts with nobody switching, and the next round commits without it', async () => {
      const bad = 'site-4';
      const good = f.dep.sites.filter((s) => s !== bad);
      expect(f.agents.get(bad)!.stats().keysetError).toMatch(/\S/);
      const opens = new Map<number, string[]>();
      const headsAtAbort = new Map<string, string>();
      const summary = await f.runCoordinator(2, (e) => {
        if (e.type === 'round-open') opens.set(e.round, e.assignments.map((a) => a.site).sort());
        if (e.type === 'decision' && e.summary.round === 1) {
          for (const [id, a] of f.agents) headsAtAbort.set(id, hex(a.head()!.hash));
        }
      });

      // Round 1: site-4 was assigned, sent nothing, voted NO; ABORT names it.
      expect(opens.get(1)).toEqual([...f.dep.sites]);
      const [r1, r2] = summary.rounds;
      expect(r1).toMatchObject({ round: 1, commit: false, contributors: 3, noVoters: [bad] });
      expect(r1!.reason).toContain(`NO from ${bad}`);
      expect(r1!.reason).toContain('cannot decrypt');
      // Round 2: site-4 sits out; the others commit.
      expect(opens.get(2)).toEqual(good);
      expect(r2).toMatchObject({ round: 2, commit: true, contributors: 3, participants: 3, noVoters: [] });

      const entries = await f.decisions();
      expect(entries.map((e) => [e.round, e.commit])).toEqual([
        [1, false],
        [2, true],
      ]);
      expectSingleChain(entries, f.genesis);
      const [abort, commit] = entries;
      expect(abort!.reason).toContain(`NO from ${bad}`);
      expect(abort!.voters).toEqual([...f.dep.sites]);
      expect(hex(abort!.commitHash)).toBe('');
      expect(commit!.voters).toEqual(good);
      expect(hex(commit!.parent)).toBe(f.genesis);

      // Nobody switched on the ABORT.
      for (const s of f.dep.sites) expect(headsAtAbort.get(s)).toBe(f.genesis);
      // The good agents switched to round 2's commit; site-4 stayed at genesis.
      await waitFor('the good agents to switch', () =>
        good.every((s) => hex(f.agents.get(s)!.head()!.hash) === hex(commit!.commitHash)),
      );
      for (const s of good) {
        const agent = f.agents.get(s)!;
        expect(hex(agent.head()!.modelHash)).toBe(hex(commit!.modelHash));
        expect(agent.stats()).toMatchObject({ commits: 1, aborts: 1, votesNo: 0 });
      }
      const badAgent = f.agents.get(bad)!;
      expect(hex(badAgent.head()!.hash)).toBe(f.genesis);
      expect(badAgent.stats()).toMatchObject({ commits: 0, votesYes: 0, updatesSent: 0 });
      expect(badAgent.stats().votesNo).toBeGreaterThanOrEqual(1);
    }, 90_000);
  });

  describe('an aggregator process killed mid-round', () => {
    let f: Federation;
    beforeAll(async () => {
      f = await create('e2ekill');
      for (const a of f.dep.aggregators) f.spawn('aggregator', a);
      for (const s of f.dep.sites) await f.startAgent(s);
    });
    afterAll(async () => {
      await f?.stop();
    });

    it('re-routes its sites to the live aggregator and never commits a round twice', async () => {
      let victim: string | undefined;
      const opens = new Map<number, Map<string, string>>();
      const partials: { round: number; aggregator: string; sites: readonly string[] }[] = [];
      let summary: CoordinatorSummary;
      try {
        summary = await f.runCoordinator(3, (e) => {
          if (e.type === 'round-open') {
            opens.set(e.round, new Map(e.assignments.map((a) => [a.site, a.aggregator])));
            if (e.round === 2) {
              // Kill an aggregator that has sites this round, right after the round opened.
              victim = [...new Set(e.assignments.map((a) => a.aggregator))].sort()[0];
              f.processes.get(victim!)!.child.kill('SIGKILL');
            }
          }
          if (e.type === 'partial') partials.push(e);
        });
      } catch (err) {
        console.error(f.dumpOutput());
        throw err;
      }
      expect(victim).toBeDefined();
      const killed = f.processes.get(victim!)!.child;
      await waitFor('the killed aggregator to exit', () => killed.signalCode !== null);
      expect(killed.signalCode).toBe('SIGKILL');
      const survivor = f.dep.aggregators.find((a) => a !== victim)!;
      const victimSites = [...opens.get(2)!].filter(([, a]) => a === victim).map(([s]) => s);
      expect(victimSites.length).toBeGreaterThan(0);

      // Round 1: both aggregators, all four sites in.
      expect(summary.rounds[0]).toMatchObject({ round: 1, commit: true, contributors: 4 });
      expect(new Set(opens.get(1)!.values()).size).toBe(2);
      // Round 2: the victim's partial never came; the round is decided on the survivor's partial
      // alone, its sites' updates only (all four sites stay participants: the weights were pinned
      // at RoundOpen). It commits when that leaves round.minContributors (3) updates, else aborts.
      const survivorSites2 = f.dep.sites.filter((s) => !victimSites.includes(s));
      const p2 = partials.filter((p) => p.round === 2);
      expect(p2.map((p) => p.aggregator)).toEqual([survivor]);
      expect([...p2[0]!.sites].sort()).toEqual(survivorSites2);
      const r2 = summary.rounds.find((r) => r.round === 2)!;
      const minimum = f.dep.config.round.minContributors;
      expect(r2).toMatchObject({
        commit: survivorSites2.length >= minimum,
        contributors: survivorSites2.length,
        participants: 4,
      });
      // Round 3: every site assigned to the survivor, and every site's update is in the COMMIT.
      expect([...opens.get(3)!.values()]).toEqual(f.dep.sites.map(() => survivor));
      const r3 = summary.rounds.find((r) => r.round === 3)!;
      expect(r3).toMatchObject({ commit: true, contributors: 4, participants: 4 });
      const p3 = partials.filter((p) => p.round === 3);
      expect(p3.map((p) => p.aggregator)).toEqual([survivor]);
      expect([...p3[0]!.sites].sort()).toEqual([...f.dep.sites]);
      for (const s of victimSites) expect(p3[0]!.sites).toContain(s);

      // The log: one entry per round, strictly increasing, COMMITs parent-linked.
      const entries = await f.decisions();
      expect(entries.map((e) => e.round)).toEqual([1, 2, 3]);
      expectSingleChain(entries, f.genesis);
      expect(entries.filter((e) => e.commit).length).toBe(summary.committed);
      expect(entries.map((e) => e.commit)).toEqual(summary.rounds.map((r) => r.commit));
      expect(summary.committed).toBe(r2.commit ? 3 : 2);
      const last = [...entries].reverse().find((e) => e.commit)!;
      await waitFor('every agent on the last commit', () =>
        [...f.agents.values()].every((a) => hex(a.head()!.hash) === hex(last.commitHash)),
      );
      for (const a of f.agents.values()) expect(hex(a.head()!.modelHash)).toBe(hex(last.modelHash));
      // The survivor is still running.
      expect(f.processes.get(survivor)!.running).toBe(true);
    }, 90_000);
  });
});
