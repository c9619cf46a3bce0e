// The message layer failing mid-round: the federation's nats-server SIGKILLed and restarted on the
// same port and JetStream directory, and one node of a three-node JetStream cluster (every stream
// with three replicas) SIGKILLed for good. Members are `cohort` processes that reconnect on their
// own; the coordinator is never restarted, so it must ride through.
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { federationSubjects } from '../../src/transport/index.ts';
import {
  type ClusterPlan,
  clusterNodeConfig,
  type NatsNode,
  planCluster,
  restartNatsServer,
  startClusterPeers,
} from '../helpers/nats-cluster.ts';
import { Federation, waitExit, waitFor, waitLine } from '../recovery/recovery-helpers.ts';
import { decisionOf, finishCase, lastRound } from './fault-checks.ts';
import { faultOverrides, startMembers } from './fault-federation.ts';

const SITES = ['site-1', 'site-2', 'site-3'];
const MS = 150_000;

/**
 * The NATS federations' settings: a round missing an update ends at a 15 s deadline, and the
 * coordinator's lease lasts 10 s (the default), longer than the outages here: with the recovery
 * suites' 1.5 s it expires while JetStream is away or elects a new leader, and the coordinator
 * stops (LEASE_LOST) as it must when it cannot know it still leads. With three replicas the lease
 * lasts 20 s: the coordinator reconnects to another node and the lease bucket elects a new leader,
 * which on a loaded two-core machine took more than 10 s once (a clean run of the whole suite), and
 * a coordinator that stops then is right to, but is not what this case checks.
 */
function natsOverrides(extra: { replicas?: number; servers?: readonly string[] } = {}) {
  const base = faultOverrides(3, 15_000);
  return {
    ...base,
    history: {
      ...base.history,
      leaseMs: extra.replicas ? 20_000 : 10_000,
      ...(extra.replicas ? { replicas: extra.replicas } : {}),
    },
    nats: { ...base.nats, ...(extra.servers ? { servers: [...extra.servers] } : {}) },
  };
}

/**
 * Runs rounds r0 + 1 … r0 + 3 with one coordinator process (never restarted); `inject` runs once
 * round r = r0 + 2 is open, after a healthy round.
 */
async function faultedRounds(f: Federation, inject: (round: number) => Promise<string>) {
  const before = await f.logEntries();
  const r = lastRound(before) + 2;
  const coordinator = f.spawn('coordinator', 'coordinator', ['--rounds', String(r + 1)]);
  await waitFor(`round ${r} open`, () => coordinator.logged('round open', { round: r }), MS);
  const injectedAt = await inject(r);
  await waitLine(f, coordinator, new RegExp(`^round ${r + 1}: `), MS);
  expect((await waitExit(coordinator, MS)).code, coordinator.output).toBe(0);
  return { before, r, injectedAt };
}

describe('fault suite: nats-server SIGKILLed and restarted mid-round', () => {
  let f: Federation;
  let restarted: NatsNode | undefined;

  beforeAll(async () => {
    f = await Federation.create('fnats', { aggregators: 1, sites: 3, overrides: natsOverrides() });
    await startMembers(f, ['agg-1'], SITES);
  });
  afterAll(async () => {
    await f?.stop();
    await restarted?.kill();
  });

  it(
    'nats-server-restart: every member reconnects; the round is decided once, the next commits, no drift',
    async () => {
      const { before, r, injectedAt } = await faultedRounds(f, async (round) => {
        restarted = await restartNatsServer(f.dep.nats, 1000);
        return `r${round}: after RoundOpen; down 1 s, same port and store`;
      });
      const { entries } = await finishCase(f, {
        id: 'nats-server-restart',
        fault: 'nats-server SIGKILLed, restarted',
        injectedAt,
        before,
        sites: SITES,
      });
      expect(decisionOf(entries, r + 1).commit).toBe(true);
    },
    2 * MS,
  );
});

describe('fault suite: one node of a three-node JetStream cluster SIGKILLed mid-round', () => {
  let f: Federation;
  let plan: ClusterPlan;
  let peers: NatsNode[] = [];

  beforeAll(async () => {
    plan = await planCluster('fclu');
    f = await Federation.create('fcluster', {
      aggregators: 1,
      sites: 3,
      natsConfig: clusterNodeConfig(plan, 0),
      overrides: natsOverrides({ replicas: 3, servers: plan.urls }),
    });
    peers = await startClusterPeers(f.dep.nats, plan);
    // JetStream answers once the three nodes elected a meta leader.
    const nc = f.coord.transport.connection;
    await waitFor('JetStream meta leader', async () => {
      try {
        const info = (await nc.request('$JS.API.INFO', '', { timeout: 1000 })).json<{ error?: unknown }>();
        return info.error === undefined;
      } catch {
        return false;
      }
    });
    await startMembers(f, ['agg-1'], SITES);
  });
  afterAll(async () => {
    await f?.stop();
    await Promise.all(peers.map((p) => p.kill()));
  });

  it(
    'jetstream-cluster-node: the log leader dies; the round is decided once, the next commits, no drift',
    async () => {
      const s = federationSubjects(f.dep.config.federation.id);
      const jsm = await jetstreamManager(f.coord.transport.connection, { checkAPI: false });
      const { before, r, injectedAt } = await faultedRounds(f, async (round) => {
        const leader = (await jsm.streams.info(s.logStream)).cluster?.leader ?? '';
        const k = Number(/-n(\d)$/.exec(leader)?.[1] ?? 0);
        expect(k, `log stream leader ${leader}`).toBeGreaterThan(0);
        if (k === 1) process.kill(f.dep.nats.pid, 'SIGKILL');
        else await peers[k - 2]!.kill();
        return `r${round}: after RoundOpen; node ${k} of 3 (the log stream's leader), not restarted`;
      });
      const { entries } = await finishCase(f, {
        id: 'jetstream-cluster-node',
        fault: 'one of three nats-servers SIGKILLed',
        injectedAt,
        before,
        sites: SITES,
      });
      expect(decisionOf(entries, r + 1).commit).toBe(true);
      // Every stream of the federation kept three replicas (history.replicas), two of them alive.
      for (const name of [
        s.logStream,
        s.aggregatesStream,
        s.snapshotsStream,
        s.contributionsStream,
        `KV_${s.leaseBucket}`,
      ]) {
        // A stream whose leader was the dead node answers once the two left elect a new one: on
        // loaded cores that can take longer than one API request waits, so ask until it answers.
        let replicas = 0;
        await waitFor(
          `${name} answers with a leader`,
          async () => {
            try {
              replicas = (await jsm.streams.info(name)).config.num_replicas;
              return true;
            } catch {
              return false;
            }
          },
          60_000,
        );
        expect(replicas, name).toBe(3);
      }
    },
    2 * MS,
  );
});
