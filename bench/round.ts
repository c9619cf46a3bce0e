// `npm run bench -- round`: (1) the he round with the real services beside the plaintext FedAvg
// round, 4 sites as separate processes in both arms (bench/round-he-plain.ts); (2) the
// parameter-sync latency of that run; (3) the real services at 4 → 1,000 sites, the sites in one
// `cohort swarm` process (bench/round-swarm.ts). Writes bench/results/round.json.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { federationGenesis } from '../src/services/agent/genesis.ts';
import { createLocalDeployment, type LocalDeployment } from '../src/services/index.ts';
import { runHeArm, runPlainArm } from './round-he-plain.ts';
import { PLAIN_HEADER } from './round-plain-wire.ts';
import { createSwarmDeployment, runSwarmSizes, type SwarmRun, type SwarmSettings } from './round-swarm.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

const env = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
/** Rounds of the he and plaintext arms (round 1 is a warm-up, reported apart). */
const ROUNDS = env('COHORT_BENCH_ROUNDS', 4);
const SITES = 4;
const AGGREGATORS = env('COHORT_BENCH_AGGREGATORS', 2);
/**
 * Training rows shared by the 4 sites: the demo's workload (all of MNIST, 15,000 rows per site) by
 * default, so the ratio compares rounds as a federation runs them. With a tiny value (e.g. 400) the
 * round is almost all protocol and the ratio shows the crypto and 2PC cost alone.
 */
const TRAIN_LIMIT = env('COHORT_BENCH_TRAIN_LIMIT', 60_000);
/** Which parts run: `he` (he vs plaintext and sync), `swarm` (the scaling rows). */
const PARTS = new Set((process.env.COHORT_BENCH_ROUND_PARTS ?? 'he,swarm').split(','));
/** The size that carries the sync goal. */
const GOAL_SITES = 100;
const GOAL_SYNC_P99_MS = 100;
/** The target of the sync P99 for the 4-site federation (docs/metrics.md). */
const SEED_SYNC_P99_MS = 200;
const SWARM: SwarmSettings = {
  sizes: (process.env.COHORT_BENCH_SITES ?? `4,64,${GOAL_SITES},256,1000`)
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n >= 3),
  rounds: Math.max(2, env('COHORT_BENCH_SWARM_ROUNDS', 4)),
  fanIn: env('COHORT_BENCH_FANIN', 128),
  rootFanIn: env('COHORT_BENCH_ROOT_FANIN', 4),
  rowsPerSite: env('COHORT_BENCH_SWARM_ROWS', 32),
  probes: env('COHORT_BENCH_PROBES', 4),
  features: 16,
  classes: 4,
};

const mean = (xs: readonly number[]) =>
  xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
function percentile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
const steady = (xs: readonly number[]) => (xs.length > 1 ? xs.slice(1) : xs);
const say = (s: string) => process.stderr.write(`[round bench] ${s}\n`);
const seconds = (t0: number) => `${((performance.now() - t0) / 1000).toFixed(1)} s`;

async function heRows(rows: BenchRow[], extra: Record<string, unknown>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-round-bench-'));
  let dep: LocalDeployment | undefined;
  try {
    const t0 = performance.now();
    dep = await createLocalDeployment({
      dir,
      federation: 'bench',
      aggregators: AGGREGATORS,
      sites: SITES,
      // The demo's federation (schema defaults: 2NN on MNIST, E = 1, B = 10, lr 0.1, FedAvg, CPU, 8-bit).
      overrides: {
        round: { deadlineMs: 300_000, voteTimeoutMs: 300_000, heartbeatMs: 200, missedHeartbeats: 50 },
        learning: { trainLimit: TRAIN_LIMIT, testLimit: 200 },
        codec: { clip: 0.02 },
        log: { level: 'error' },
      },
    });
    say(`deployment up (${seconds(t0)}); he rounds, sites as processes…`);
    const he = await runHeArm(dep, ROUNDS);
    say('plaintext rounds, sites as processes…');
    const plain = await runPlainArm(dep, he.assignments, ROUNDS);
    const nParams = federationGenesis(dep.config).parameters.length;
    const heMean = mean(steady(he.durations));
    const plainMean = mean(steady(plain));
    const ratio = heMean / plainMean;
    const sec = 'he vs plaintext';
    const plainFloor = { metric: `plaintext FedAvg round, sites as processes`, value: plainMean };
    rows.push(
      {
        section: sec,
        metric: `he round, mean r2..r${ROUNDS} (${SITES} site processes, ${AGGREGATORS} aggs, 2NN ${nParams.toLocaleString('en-US')} params, ${TRAIN_LIMIT.toLocaleString('en-US')} rows)`,
        value: heMean,
        unit: 'ms',
        floor: plainFloor,
        compare: '≤ 1.3× plaintext',
        pass: ratio <= 1.3,
      },
      {
        section: sec,
        metric: `plaintext FedAvg round, mean r2..r${ROUNDS}`,
        value: plainMean,
        unit: 'ms',
        compare: `r1 ${plain[0]?.toFixed(0)} ms`,
        detail: true,
      },
      {
        section: sec,
        metric: 'he round 1 (warm-up)',
        value: he.durations[0] ?? Number.NaN,
        unit: 'ms',
        compare: `${he.committed} commit / ${he.aborted} abort`,
        detail: true,
      },
      {
        section: sec,
        metric: 'he: open → PREPARE (train, encrypt, upload, verify, sum)',
        value: mean(steady(he.openToPrepareMs)),
        unit: 'ms',
        compare: '',
        detail: true,
      },
      {
        section: sec,
        metric: 'he: PREPARE → decision (decrypt, apply, store, vote, log)',
        value: mean(steady(he.prepareToDecisionMs)),
        unit: 'ms',
        compare: '',
        detail: true,
      },
      {
        section: sec,
        metric: 'he upload per round (all sites)',
        value: mean(he.uploadBytes) / 1e6,
        unit: 'MB',
        floor: { metric: 'plaintext float32 upload', value: (SITES * (nParams * 4 + PLAIN_HEADER)) / 1e6 },
        compare: '',
        detail: true,
      },
    );
    const sync = steady([...new Set(he.switches.map((s) => s.round))])
      .flatMap((r) => he.switches.filter((s) => s.round === r))
      .map((s) => s.latencyMs);
    rows.push(
      {
        section: 'param sync',
        metric: `COMMIT → site switched, P50 (${SITES} site processes, ${sync.length} switches)`,
        value: percentile(sync, 0.5),
        unit: 'ms',
        compare: '',
      },
      {
        section: 'param sync',
        metric: `COMMIT → site switched, P99 (${SITES} site processes)`,
        value: percentile(sync, 0.99),
        unit: 'ms',
        compare: `< ${SEED_SYNC_P99_MS} (target in docs/metrics.md)`,
        pass: percentile(sync, 0.99) < SEED_SYNC_P99_MS,
      },
    );
    extra.he = he;
    extra.plain = { durations: plain };
  } finally {
    await dep?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function swarmRows(rows: BenchRow[], runs: readonly SwarmRun[]): void {
  const sec = 'swarm (real services)';
  const base = runs[0];
  const baseRound = base === undefined ? Number.NaN : mean(base.roundMs);
  for (const r of runs) {
    const roundMs = mean(r.roundMs);
    const p99 = percentile(r.switchMs, 0.99);
    const probeP99 = percentile(r.probeSwitchMs, 0.99);
    const firstSwitch = mean(r.firstSwitchMs);
    const goal = r.sites === GOAL_SITES;
    rows.push(
      {
        section: sec,
        metric: `${r.sites} sites / ${r.aggregators} aggs in ${r.levels} level${r.levels === 1 ? '' : 's'} (≤ ${Math.ceil(r.sites / r.aggregators)} sites each): round, mean of ${r.roundMs.length}`,
        value: roundMs,
        unit: 'ms',
        ...(r === base ? {} : { floor: { metric: `round at ${base!.sites} sites`, value: baseRound } }),
        compare: `${r.committed} commit / ${r.aborted} abort; heartbeat ${r.heartbeatMs} ms`,
      },
      {
        section: sec,
        metric: `${r.sites} sites: sync COMMIT → switched, sites in own processes (${r.probes}), P50`,
        value: percentile(r.probeSwitchMs, 0.5),
        unit: 'ms',
        compare: `${r.probeSwitchMs.length} switches`,
      },
      {
        section: sec,
        metric: `${r.sites} sites: sync COMMIT → switched, sites in own processes (${r.probes}), P99`,
        value: probeP99,
        unit: 'ms',
        compare: goal ? `< ${GOAL_SYNC_P99_MS}` : '',
        ...(goal ? { pass: probeP99 < GOAL_SYNC_P99_MS } : {}),
      },
      {
        section: sec,
        metric: `${r.sites} sites: sync COMMIT → switched, every site (swarm's queue included), P50`,
        value: percentile(r.switchMs, 0.5),
        unit: 'ms',
        floor: { metric: "first site's switch", value: firstSwitch },
        compare: '',
        detail: true,
      },
      {
        section: sec,
        metric: `${r.sites} sites: sync COMMIT → switched, every site (swarm's queue included), P99`,
        value: p99,
        unit: 'ms',
        floor: { metric: "first site's switch", value: firstSwitch },
        compare: "one process does every site's work in turn",
      },
      {
        section: sec,
        metric: `${r.sites} sites: open → PREPARE / PREPARE → decision`,
        value: mean(r.openToPrepareMs),
        unit: 'ms',
        compare: `then ${mean(r.prepareToDecisionMs).toFixed(0)} ms`,
        detail: true,
      },
      {
        section: sec,
        metric: `${r.sites} sites: swarm start (connect, read the log, catch up)`,
        value: r.swarmStartMs,
        unit: 'ms',
        compare: `${r.swarmRssMiB} MiB RSS`,
        detail: true,
      },
    );
  }
}

/**
 * Round benchmark, one run (see the file's head). Every row's floor was measured in the same run:
 * the he round beside the plaintext round, a swarm size's round beside the smallest size's, a
 * size's sync latency beside its first site's switch (one site's own latency, no queue before it).
 */
export async function runRoundBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const extra: Record<string, unknown> = {};
  const tStart = performance.now();
  if (PARTS.has('he')) await heRows(rows, extra);
  if (PARTS.has('swarm') && SWARM.sizes.length > 0) {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-swarm-bench-'));
    let dep: LocalDeployment | undefined;
    try {
      const t0 = performance.now();
      dep = await createSwarmDeployment(dir, SWARM);
      say(`swarm deployment of ${Math.max(...SWARM.sizes)} sites up (${seconds(t0)})`);
      extra.swarmCeremonyMs = Math.round(performance.now() - t0);
      const runs = await runSwarmSizes(dep, SWARM);
      swarmRows(rows, runs);
      extra.swarm = { settings: SWARM, params: federationGenesis(dep.config).parameters.length, runs };
    } finally {
      await dep?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  printTable(
    `Round benchmark (he: ${SITES} site processes / ${AGGREGATORS} aggregators, 2NN, trainLimit ${TRAIN_LIMIT}, ${ROUNDS} rounds; swarm: ${SWARM.sizes.join(', ')} sites, ${SWARM.rounds} rounds each; total ${seconds(tStart)})`,
    rows,
  );
  const path = writeResults('round', rows, {
    config: { ROUNDS, SITES, AGGREGATORS, TRAIN_LIMIT, parts: [...PARTS] },
    ...extra,
  });
  console.log(`\nwrote ${path}`);
  return rows;
}
