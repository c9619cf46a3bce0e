// The round bench's scaling rows: the real services at 4 → 1,000 sites. One deployment with the
// largest size's members (key ceremony, nats-server with a user per member); for each size, all
// sites but a few run in one `cohort swarm` child process, the few others ("probe" sites) each in
// a process of its own as on a machine of its own, the aggregators as `cohort aggregator`
// processes (one per FANIN sites), the coordinator in this process, for a few rounds of a tiny
// model.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { minScaleBits } from '../crypto/ckks/index.ts';
import { loadConfig } from '../src/config/index.ts';
import { federationGenesis } from '../src/services/agent/genesis.ts';
import { buildAggregationTree } from '../src/services/coordinator/aggregation-tree.ts';
import { type CoordinatorEvent, startCoordinator } from '../src/services/coordinator/index.ts';
import {
  createLocalDeployment,
  type LocalDeployment,
  type MemberContext,
  openMember,
} from '../src/services/index.ts';
import { type BenchChild, spawnCohort, stopAll } from './round-processes.ts';

const say = (s: string) => process.stderr.write(`[round bench] ${s}\n`);

/** Swarm settings, recorded in the result file. */
export interface SwarmSettings {
  sizes: number[];
  /** Rounds per size; the first is a warm-up, left out of the figures. */
  rounds: number;
  /** Most sites per aggregator: a size of n sites runs ceil(n / fanIn) aggregators. */
  fanIn: number;
  /**
   * `round.tree.rootFanIn`: most aggregators sending to the coordinator; a size with more
   * aggregators runs a tree of two (or more) levels, aggregators summing aggregators.
   */
  rootFanIn: number;
  /** Synthetic training rows per site. */
  rowsPerSite: number;
  /**
   * Sites that run each in a process of its own (site-1 … site-probes), next to the swarm of the
   * others: their sync latency is what a site on its own machine sees in a federation of that size
   * (it reads and checks every vote of the round itself), without the queue of a swarm's other
   * sites in front of it.
   */
  probes: number;
  features: number;
  classes: number;
}

/** One size's measurements. */
export interface SwarmRun {
  sites: number;
  aggregators: number;
  /** Levels of aggregators in the round's tree (1: every aggregator sends to the coordinator). */
  levels: number;
  /** `round.heartbeatMs` of this size (see {@link heartbeatMsFor}). */
  heartbeatMs: number;
  /** ms for the swarm process to open and start every agent (connect, read the log, catch up). */
  swarmStartMs: number;
  swarmRssMiB: number;
  /** Per measured round: RoundOpen → decision, ms (the coordinator's durationMs). */
  roundMs: number[];
  /** Per measured round: RoundOpen → PREPARE, ms. */
  openToPrepareMs: number[];
  /** Per measured round: PREPARE → decision, ms. */
  prepareToDecisionMs: number[];
  /** Every COMMIT → switched latency of the measured rounds, ms. */
  switchMs: number[];
  /** The probe sites' COMMIT → switched latencies of the measured rounds, ms. */
  probeSwitchMs: number[];
  /** How many probe sites ran (each its own process). */
  probes: number;
  /** Per measured round: the first site's switch, ms (one site's own latency, no queue before it). */
  firstSwitchMs: number[];
  committed: number;
  aborted: number;
  contributors: number[];
}

/**
 * `round.heartbeatMs` for `sites` sites in one swarm process: every heartbeat is a Falcon signature
 * (tens of ms in JavaScript) in the swarm and a verification in the coordinator, so the interval
 * grows with the swarm to keep heartbeats a small share of the round's CPU: 60 ms per site, at
 * least 1 s, at most the schema's 60 s.
 */
export function heartbeatMsFor(sites: number): number {
  return Math.min(60_000, Math.max(1000, sites * 60));
}

/** Levels of the aggregation tree the coordinator builds over `aggregators` (equal capacities). */
function treeLevels(aggregators: readonly string[], rootFanIn: number, fanIn: number): number {
  const parents = buildAggregationTree(
    aggregators.map((id) => ({ id, capacity: 1 })),
    { rootFanIn, fanIn },
  );
  const depth = (id: string): number => (parents.get(id) === '' ? 1 : 1 + depth(parents.get(id)!));
  return Math.max(...aggregators.map(depth));
}

/** `crypto.ckks.scaleBits` for up to `sites` contributors at the default ring degree. */
const scaleBits = (sites: number) => Math.max(16, minScaleBits(8192, Math.max(32, sites)));

/** The tiny model's deployment: `maxSites` sites, ceil(maxSites / fanIn) aggregators. */
export async function createSwarmDeployment(dir: string, s: SwarmSettings): Promise<LocalDeployment> {
  const maxSites = Math.max(...s.sizes);
  return createLocalDeployment({
    dir,
    federation: 'swarm',
    sites: maxSites,
    aggregators: Math.ceil(maxSites / s.fanIn),
    overrides: {
      data: {
        kind: 'tabular',
        features: Array.from({ length: s.features }, (_, i) => ({ name: `x${i}`, type: 'number' as const })),
        label: { name: 'y', classes: Array.from({ length: s.classes }, (_, i) => i) },
      },
      learning: { model: 'logreg', epochs: 1, batchSize: 16, learningRate: 0.1 },
      codec: { bits: 8, clip: 0.05, maxContributors: Math.max(32, maxSites), crcChunkBytes: 16_384 },
      // A sum of this many ciphertexts needs a larger scale than the default (the configuration
      // refuses less): one exact bit fewer per slot makes room for it in the first modulus.
      crypto: { ckks: { scaleBits: scaleBits(maxSites), exactBits: Math.min(42, 59 - scaleBits(maxSites)) } },
      round: {
        deadlineMs: 900_000,
        voteTimeoutMs: 900_000,
        missedHeartbeats: 5,
        tree: { rootFanIn: s.rootFanIn },
      },
      // A swarm's host is busy: TLS handshakes of members starting next to running agents are slow.
      nats: { timeoutMs: 30_000 },
      log: { level: 'error' },
    },
  });
}

/** The deployment's configuration file with `round` settings for `sites` sites, written beside it. */
function sizeConfig(dep: LocalDeployment, sites: number, aggregators: number): string {
  const input = parse(readFileSync(dep.configPath, 'utf8')) as Record<string, Record<string, unknown>>;
  // A straggler is cut after a deadline that grows with the swarm (it does every site's work in turn).
  const deadlineMs = Math.max(60_000, sites * 400);
  input.round = {
    ...input.round,
    heartbeatMs: heartbeatMsFor(sites),
    quorum: sites + aggregators,
    deadlineMs,
    voteTimeoutMs: deadlineMs,
  };
  const path = join(dep.dir, `federation-${sites}.yaml`);
  writeFileSync(path, stringify(input));
  return path;
}

/**
 * Runs `settings.rounds` rounds at each size, largest first (the smaller swarms are then subsets
 * of sites already at the head: no catch-up in their start). The coordinator restarts per size on
 * the same log and runs `rounds` more rounds; the first of each size is a warm-up.
 */
export async function runSwarmSizes(dep: LocalDeployment, s: SwarmSettings): Promise<SwarmRun[]> {
  const runs: SwarmRun[] = [];
  let lastRound = 0;
  const nParams = federationGenesis(dep.config).parameters.length;
  say(`swarm model: logreg ${s.features}→${s.classes}, ${nParams} params`);
  for (const n of [...s.sizes].sort((a, b) => b - a)) {
    const k = Math.ceil(n / s.fanIn);
    const path = sizeConfig(dep, n, k);
    const config = loadConfig(path);
    const children: BenchChild[] = [];
    let coordCtx: MemberContext | undefined;
    try {
      for (const a of dep.aggregators.slice(0, k))
        children.push(spawnCohort(a, ['aggregator', '--config', path, '--member', a]));
      const probes = Math.min(s.probes, n - 1);
      const probeIds = new Set(Array.from({ length: probes }, (_, i) => `site-${i + 1}`));
      const swarmArgs = (sites: string) => [
        'swarm',
        '--config',
        path,
        '--sites',
        sites,
        '--synthetic-rows',
        String(s.rowsPerSite),
      ];
      const swarm = spawnCohort(`swarm ${n}`, swarmArgs(`site-${probes + 1}..site-${n}`));
      children.push(swarm);
      // A swarm of one member is one agent in its own process (no shared reads or checks).
      const probeChildren = [...probeIds].map((id) => spawnCohort(id, swarmArgs(id)));
      children.push(...probeChildren);
      const ready = await swarm.waitEvent('swarm-ready', 1_800_000);
      for (const c of [swarm, ...probeChildren]) {
        const r = c === swarm ? ready : await c.waitEvent('swarm-ready', 600_000);
        if (r.failed !== 0) throw new Error(`${c.name}: ${r.failed} members failed:\n${c.lines.join('\n')}`);
      }
      say(
        `swarm of ${n - probes} (+ ${probes} sites in their own processes) ready in ${ready.startMs} ms (${ready.rssMiB} MiB); ${k} aggregators; rounds…`,
      );
      coordCtx = await openMember(config, dep.coordinator);
      const first = lastRound + 1;
      const marks = new Map<number, { open: number; prepare: number; decision: number }>();
      const switches = new Map<number, number[]>();
      const probeSwitches = new Map<number, number[]>();
      const onEvent = (e: CoordinatorEvent) => {
        const now = performance.now();
        if (e.type === 'round-open') marks.set(e.round, { open: now, prepare: now, decision: now });
        if (e.type === 'prepare') marks.get(e.round)!.prepare = now;
        if (e.type === 'decision') {
          marks.get(e.summary.round)!.decision = now;
          say(
            `${n} sites, round ${e.summary.round}: ${e.summary.commit ? 'COMMIT' : `ABORT (${e.summary.reason})`} in ${e.summary.durationMs} ms, ${e.summary.contributors} contributors`,
          );
        }
        if (e.type === 'switched') {
          switches.set(e.round, [...(switches.get(e.round) ?? []), e.latencyMs]);
          if (probeIds.has(e.member))
            probeSwitches.set(e.round, [...(probeSwitches.get(e.round) ?? []), e.latencyMs]);
        }
      };
      const coordinator = startCoordinator(coordCtx, {
        rounds: lastRound + s.rounds,
        onEvent,
        // Rounds open once every site switched; a site that missed the decision is waited for at most this.
        switchWaitMs: Math.max(30_000, n * 200),
      });
      const died = Promise.race(
        children.map((c) =>
          c.exited.then((code) => Promise.reject(new Error(`${c.name} exited (${code}):\n${c.stderr}`))),
        ),
      );
      const summary = await Promise.race([coordinator.done, died]);
      const measured = summary.rounds.filter((r) => r.round > first);
      lastRound = summary.rounds.at(-1)?.round ?? lastRound;
      const steady = [...marks].filter(([r]) => r > first).map(([, m]) => m);
      const switchRounds = [...switches].filter(([r]) => r > first).map(([, l]) => l);
      runs.push({
        sites: n,
        aggregators: k,
        levels: treeLevels(dep.aggregators.slice(0, k), s.rootFanIn, config.round.tree.fanIn),
        heartbeatMs: heartbeatMsFor(n),
        swarmStartMs: Number(ready.startMs),
        swarmRssMiB: Number(ready.rssMiB),
        roundMs: measured.map((r) => r.durationMs),
        openToPrepareMs: steady.map((m) => m.prepare - m.open),
        prepareToDecisionMs: steady.map((m) => m.decision - m.prepare),
        switchMs: switchRounds.flat(),
        probeSwitchMs: [...probeSwitches].filter(([r]) => r > first).flatMap(([, l]) => l),
        probes,
        firstSwitchMs: switchRounds.map((l) => Math.min(...l)),
        committed: summary.committed,
        aborted: summary.aborted,
        contributors: measured.map((r) => r.contributors),
      });
    } finally {
      await coordCtx?.close();
      await stopAll(children);
    }
  }
  return runs.sort((a, b) => a.sites - b.sites);
}
