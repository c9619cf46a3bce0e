// Swarm: many real site agents in one process (each its own keys and NATS user) against a real
// coordinator and aggregator over a real nats-server with per-member permissions.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { CoordinatorSummary } from '../../src/services/coordinator/index.ts';
import { parseSiteList, type SwarmHandle, startSwarm } from '../../src/services/swarm/index.ts';
import {
  expectSingleChain,
  Federation,
  hex,
  MemberProcess,
  stopChild,
  waitFor,
} from '../helpers/federation.ts';

const BIN = fileURLToPath(new URL('../../bin/cohort.js', import.meta.url));

const SITES = 8;

describe('swarm: 8 sites in one process', () => {
  let f: Federation;
  let swarm: SwarmHandle | undefined;
  let summary: CoordinatorSummary;

  beforeAll(async () => {
    const data: CohortConfigInput['data'] = {
      kind: 'tabular',
      features: Array.from({ length: 6 }, (_, i) => ({ name: `x${i}`, type: 'number' as const })),
      label: { name: 'y', classes: [0, 1, 2] },
    };
    f = await Federation.create('swarm', {
      sites: SITES,
      aggregators: 1,
      overrides: {
        data,
        learning: { model: 'logreg', epochs: 1, batchSize: 8, learningRate: 0.1 },
        round: { heartbeatMs: 500, missedHeartbeats: 20, deadlineMs: 30_000, voteTimeoutMs: 30_000 },
        log: { level: 'error' },
        // Not the default scale: the deployment's key ceremony must make the CKKS secret for these.
        crypto: { ckks: { scaleBits: 17 } },
      },
    });
    await f.startAggregator('agg-1');
    swarm = await startSwarm(f.dep.config, {
      members: parseSiteList(`site-1..site-${SITES}`),
      syntheticRows: 24,
    });
    summary = await f.runCoordinator(2);
  }, 120_000);

  afterAll(async () => {
    await swarm?.stop();
    await f?.stop();
  });

  it('starts every member with its own agent', () => {
    expect(swarm!.failures).toEqual([]);
    expect([...swarm!.agents.keys()].sort()).toEqual([...f.dep.sites].sort());
  });

  it('commits two rounds with every site contributing, each site at the committed head', async () => {
    expect(summary.rounds.map((r) => [r.round, r.commit, r.contributors])).toEqual([
      [1, true, SITES],
      [2, true, SITES],
    ]);
    const decisions = await f.decisions();
    expectSingleChain(decisions, f.genesis);
    const head = hex(decisions.at(-1)!.commitHash);
    expect(summary.head).toBe(head);
    for (const [id, agent] of swarm!.agents) {
      expect(hex(agent.head()!.hash), id).toBe(head);
      expect(agent.stats().commits, id).toBe(2);
    }
    expect(summary.switchLatency.count).toBe(2 * SITES);
  });

  it('logs one signed vote per site per round', async () => {
    const entries = await f.logEntries();
    for (const round of [1, 2]) {
      const voters = entries
        .flatMap((e) =>
          e.record.votes != null && Number(e.record.votes.round) === round
            ? e.record.votes.votes.map((v) => v.member)
            : [],
        )
        .sort();
      expect(voters, `round ${round}`).toEqual([...f.dep.sites].sort());
    }
  });

  it('stops cleanly: every agent stopped, a second stop is a no-op', async () => {
    await swarm!.stop();
    await swarm!.stop();
    for (const agent of swarm!.agents.values())
      expect(['READY', 'STOPPED', 'LOADING']).toContain(agent.state);
    swarm = undefined;
  });

  it('`cohort swarm` runs the members as a process and stops on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [BIN, 'swarm', '--config', f.dep.configPath, '--sites', 'site-1..site-3', '--synthetic-rows', '24'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const p = new MemberProcess('swarm', child);
    try {
      await waitFor('swarm-ready', () => p.events.some((e) => e.event === 'swarm-ready'), 60_000);
      child.kill('SIGTERM');
      expect(await p.exited).toEqual({ code: 0, signal: null });
    } finally {
      await stopChild(child);
    }
    const events = p.events;
    expect(events.find((e) => e.event === 'swarm-ready')).toMatchObject({
      members: 3,
      started: 3,
      failed: 0,
    });
    expect(events.find((e) => e.event === 'swarm-stopped')).toMatchObject({ started: 3, failed: 0 });
  }, 120_000);
});

describe('parseSiteList', () => {
  it('expands ranges and lists in order', () => {
    expect(parseSiteList('site-1..site-3,extra,s9..s10')).toEqual([
      'site-1',
      'site-2',
      'site-3',
      'extra',
      's9',
      's10',
    ]);
  });
  it('refuses duplicates, reversed ranges, mixed prefixes and empty lists', () => {
    expect(() => parseSiteList('site-1,site-1')).toThrow(/twice/);
    expect(() => parseSiteList('site-3..site-1')).toThrow(/first number/);
    expect(() => parseSiteList('a1..b3')).toThrow(/same prefix/);
    expect(() => parseSiteList(' , ')).toThrow(/no site/);
  });
});
