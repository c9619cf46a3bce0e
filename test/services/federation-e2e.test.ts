// End-to-end: the real coordinator, aggregators and site agents over a real nats-server (JetStream,
// per-member users), as in docs/round-protocol.md. Three federations, each with its own server:
//   1. four agents, two rounds: every round commits and every agent ends on the logged commit;
//   2. an agent that cannot decrypt votes NO: the round aborts, nobody switches, and the next round
//      commits without it;
//   3. an aggregator process is SIGKILLed in round 2: its sites are re-routed to the live
//      aggregator and the decision log stays a single, parent-linked chain.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { type AgentService, federationGenesis, startAgent } from '../../src/services/agent/index.ts';
import { type AggregatorService, startAggregator } from '../../src/services/aggregator/index.ts';
import {
  type CoordinatorEvent,
  type CoordinatorSummary,
  startCoordinator,
} from '../../src/services/coordinator/index.ts';
import { type LoggedDecision, openDecisionLog } from '../../src/services/decision-log/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../../src/services/index.ts';
import { bytesToHex } from '../../src/versions/index.ts';

const BIN = fileURLToPath(new URL('../../bin/cohort.js', import.meta.url));
const hex = bytesToHex;

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

/** Polls `check` until it holds; throws naming `what` after `ms`. */
async function waitFor(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * One federation on its own nats-server: the deployment, the coordinator's context, and whatever
 * the test starts (agents, aggregators, child processes), all torn down by {@link Federation.stop}
 * in reverse order, each step on its own so one failure does not leave the rest running.
 */
class Federation {
  readonly dep: LocalDeployment;
  readonly coord: MemberContext;
  readonly agents = new Map<string, AgentService>();
  readonly children = new Map<string, ChildProcess>();
  readonly childOutput = new Map<string, string>();
  readonly #cleanup: (() => Promise<unknown> | unknown)[] = [];

  private constructor(dep: LocalDeployment, coord: MemberContext) {
    this.dep = dep;
    this.coord = coord;
  }

  static async create(name: string): Promise<Federation> {
    const dir = mkdtempSync(join(tmpdir(), `cohort-e2e-${name}-`));
    let dep: LocalDeployment | undefined;
    try {
      dep = await createLocalDeployment({
        dir,
        federation: name,
        aggregators: 2,
        sites: 4,
        overrides: OVERRIDES,
      });
      const f = new Federation(dep, await openMember(dep.config, dep.coordinator));
      f.#cleanup.push(
        () => rmSync(dir, { recursive: true, force: true }),
        () => dep!.stop(),
        () => f.coord.close(),
      );
      return f;
    } catch (err) {
      await dep?.stop();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  get genesis(): string {
    return hex(federationGenesis(this.dep.config).commit.hash);
  }

  async member(id: string): Promise<MemberContext> {
    const ctx = await openMember(this.dep.config, id);
    this.#cleanup.push(() => ctx.close());
    return ctx;
  }

  async startAgent(id: string, evaluate = false): Promise<AgentService> {
    const ctx = await this.member(id);
    const agent = await startAgent(ctx, { evaluate });
    this.#cleanup.push(() => agent.stop());
    this.agents.set(id, agent);
    return agent;
  }

  async startAggregator(id: string): Promise<AggregatorService> {
    const service = await startAggregator(await this.member(id));
    this.#cleanup.push(() => service.stop());
    return service;
  }

  /** `cohort aggregator --config … --member <id>` as a child process (as the demo runs it). */
  spawnAggregator(id: string): ChildProcess {
    const child = spawn(
      process.execPath,
      [BIN, 'aggregator', '--config', this.dep.configPath, '--member', id],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env },
      },
    );
    this.childOutput.set(id, '');
    child.stderr?.on('data', (d: Buffer) => {
      this.childOutput.set(id, (this.childOutput.get(id)! + d.toString()).slice(-4000));
    });
    this.children.set(id, child);
    // Should the test process end without teardown, do not leave the child behind.
    const onExit = () => child.kill('SIGKILL');
    process.once('exit', onExit);
    this.#cleanup.push(async () => {
      await stopChild(child);
      process.off('exit', onExit);
    });
    return child;
  }

  /** Starts the coordinator; `stop` is registered so an unfinished run is ended on teardown. */
  runCoordinator(rounds: number, onEvent: (e: CoordinatorEvent) => void): Promise<CoordinatorSummary> {
    const handle = startCoordinator(this.coord, { rounds, onEvent, switchWaitMs: 5000 });
    this.#cleanup.push(() => handle.stop());
    return handle.done;
  }

  /** Every entry of the decision log, verified (signatures and hash chain). */
  async log(): Promise<LoggedDecision[]> {
    const log = await openDecisionLog(
      this.coord.transport.connection,
      this.dep.config.federation.id,
      this.coord.signing,
      this.coord.member,
      {
        keys: this.coord.keys,
      },
    );
    const out: LoggedDecision[] = [];
    for await (const e of log.entries()) out.push(e);
    return out;
  }

  async stop(): Promise<void> {
    while (this.#cleanup.length > 0) {
      const step = this.#cleanup.pop()!;
      try {
        await step();
      } catch (err) {
        // keep tearing down; the failure is reported but does not leave processes behind
        console.error('teardown step failed:', err);
      }
    }
  }
}

/** SIGTERM, then SIGKILL after 2 s; resolves once the child has exited. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
  await exited;
  clearTimeout(timer);
}

/**
 * The log is one chain of decisions: rounds strictly increasing (so each round decided once),
 * every COMMIT's parent is the previous COMMIT (genesis for the first), heights count commits, and
 * an ABORT leaves the head where it was.
 */
function expectSingleChain(entries: readonly LoggedDecision[], genesis: string): void {
  let head = genesis;
  let height = 0;
  let lastRound = 0;
  for (const [i, e] of entries.entries()) {
    expect(e.sequence).toBe(i + 1);
    expect(e.body.round).toBeGreaterThan(lastRound);
    lastRound = e.body.round;
    expect(hex(e.body.parent)).toBe(head);
    if (e.body.commit) {
      height++;
      expect(e.body.height).toBe(height);
      head = hex(e.body.commitHash);
    } else {
      expect(e.body.height).toBe(height);
    }
  }
  const rounds = entries.map((e) => e.body.round);
  expect(new Set(rounds).size).toBe(rounds.length);
}

describe('federation end to end (real services, real nats-server)', () => {
  describe('four agents, two rounds', () => {
    let f: Federation;
    beforeAll(async () => {
      f = await Federation.create('e2eok');
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
      const entries = await f.log();
      expect(entries.map((e) => [e.body.round, e.body.commit])).toEqual([
        [1, true],
        [2, true],
      ]);
      expectSingleChain(entries, f.genesis);
      for (const e of entries) expect(e.body.voters).toEqual([...f.dep.sites]);

      // After each round, every agent switched to exactly the commit and model the log records.
      for (const e of entries) {
        const heads = switchedHeads.get(e.body.round);
        expect(heads && [...heads.keys()].sort()).toEqual([...f.dep.sites]);
        for (const h of heads!.values()) {
          expect(h).toEqual({ hash: hex(e.body.commitHash), model: hex(e.body.modelHash) });
        }
      }
      const last = entries.at(-1)!.body;
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
      f = await Federation.create('e2eno');
      for (const a of f.dep.aggregators) await f.startAggregator(a);
      // site-4's wrapped CKKS key is garbage: it starts, but cannot encrypt or decrypt.
      writeFileSync(join(f.dep.config.members!.keysDir, 'site-4.ckks.env'), new Uint8Array(64).fill(7));
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

      const entries = await f.log();
      expect(entries.map((e) => [e.body.round, e.body.commit])).toEqual([
        [1, false],
        [2, true],
      ]);
      expectSingleChain(entries, f.genesis);
      const [abort, commit] = entries.map((e) => e.body);
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
      f = await Federation.create('e2ekill');
      for (const a of f.dep.aggregators) f.spawnAggregator(a);
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
              f.children.get(victim!)!.kill('SIGKILL');
            }
          }
          if (e.type === 'partial') partials.push(e);
        });
      } catch (err) {
        for (const [id, out] of f.childOutput) console.error(`--- ${id} stderr ---\n${out}`);
        throw err;
      }
      expect(victim).toBeDefined();
      const killed = f.children.get(victim!)!;
      await waitFor('the killed aggregator to exit', () => killed.signalCode !== null);
      expect(killed.signalCode).toBe('SIGKILL');
      const survivor = f.dep.aggregators.find((a) => a !== victim)!;
      const victimSites = [...opens.get(2)!].filter(([, a]) => a === victim).map(([s]) => s);
      expect(victimSites.length).toBeGreaterThan(0);

      // Round 1: both aggregators, all four sites in.
      expect(summary.rounds[0]).toMatchObject({ round: 1, commit: true, contributors: 4 });
      expect(new Set(opens.get(1)!.values()).size).toBe(2);
      // Round 2: the victim's partial never came.
      expect(partials.filter((p) => p.round === 2).map((p) => p.aggregator)).not.toContain(victim);
      // Round 3: every site assigned to the survivor, and every site's update is in the COMMIT.
      expect([...opens.get(3)!.values()]).toEqual(f.dep.sites.map(() => survivor));
      const r3 = summary.rounds.find((r) => r.round === 3)!;
      expect(r3).toMatchObject({ commit: true, contributors: 4, participants: 4 });
      const p3 = partials.filter((p) => p.round === 3);
      expect(p3.map((p) => p.aggregator)).toEqual([survivor]);
      expect([...p3[0]!.sites].sort()).toEqual([...f.dep.sites]);
      for (const s of victimSites) expect(p3[0]!.sites).toContain(s);

      // The log: one entry per round, strictly increasing, COMMITs parent-linked.
      const entries = await f.log();
      expect(entries.map((e) => e.body.round)).toEqual([1, 2, 3]);
      expectSingleChain(entries, f.genesis);
      expect(entries.filter((e) => e.body.commit).length).toBe(summary.committed);
      const last = [...entries].reverse().find((e) => e.body.commit)!.body;
      await waitFor('every agent on the last commit', () =>
        [...f.agents.values()].every((a) => hex(a.head()!.hash) === hex(last.commitHash)),
      );
      for (const a of f.agents.values()) expect(hex(a.head()!.modelHash)).toBe(hex(last.modelHash));
      // The survivor is still running.
      expect(f.children.get(survivor)!.exitCode).toBeNull();
    }, 90_000);
  });
});
