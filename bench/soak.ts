// Soak benchmark: a federation with every member its own process (nats-server, the coordinator,
// aggregators, site agents: the real `cohort` services in `he` mode, signatures, 2PC, log,
// heartbeats) runs many rounds of a small model while the resident memory of every process is
// read at each decision. A service that leaks per round shows as RSS growth after warm-up.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, type WriteStream, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { mnistDataContract, writeDemoSiteData } from '../src/demo/demo-site-data.ts';
import { federationGenesis } from '../src/services/agent/index.ts';
import { createLocalDeployment, type LocalDeployment } from '../src/services/deployment.ts';
import { renderLinePlot } from '../src/simulate/index.ts';
import { freePort } from '../src/transport/index.ts';
import {
  type LiveSeries,
  liveGrowth,
  quantile,
  RssSeries,
  readLiveSeries,
  rssEnvelopeGrowth,
  rssGrowth,
  soakWindows,
} from './soak-rss.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'cohort.js');
const PROBE = join(ROOT, 'bench', 'soak-probe.ts');
/** Every this many rounds each member runs a full GC and reports what is live (bench/soak-probe.ts). */
const PROBE_EVERY = 25;
const PLOT = join(ROOT, 'docs', 'soak-rss.svg');

/** Rounds measured, after the warm-up. */
const ROUNDS = Number(process.env.COHORT_BENCH_SOAK_ROUNDS ?? 1000);
/**
 * Rounds before the measured ones. Long, because two caches fill for hundreds of rounds before
 * they hold steady: nats-server keeps the newest message block of each stream its clients read
 * (up to 8 MiB a stream in nats-server 2.9; the log's fills in ~450 rounds of this model, measured
 * with its heap profile), and V8 sizes each member's heap.
 */
const WARMUP = Number(process.env.COHORT_BENCH_SOAK_WARMUP ?? 500);
const TOTAL = WARMUP + ROUNDS;
/** MNIST rows per site (a tenth held out for validation). */
const ROWS_PER_SITE = Number(process.env.COHORT_BENCH_SOAK_ROWS ?? 400);
const SITES = 4;
const AGGREGATORS = 2;
/** Growth of RSS after warm-up a process may show… */
const GROWTH_GOAL = 0.1;
/** …over this many rounds (issue 11: 500). */
const GROWTH_SPAN = 500;
/** A federation that decides no round for this long has hung: the soak fails. */
const STALL_MS = 180_000;

const say = (s: string) => console.error(`[soak] ${s}`);

/** A decided round as the coordinator prints it (see src/cli/commands/coordinator.ts). */
const ROUND_LINE = /^round (\d+): \d+\/\d+ contributors, (COMMIT|ROLLBACK COMMIT|ABORT)/;

interface Member {
  readonly name: string;
  readonly child: ChildProcess;
  readonly log: WriteStream;
  /** Where bench/soak-probe.ts appends the member's memory after each full GC. */
  readonly probeFile: string;
}

/**
 * `cohort <args> --config …` as a child process, its stdout (JSON log lines) and stderr (human
 * lines) to `<dir>/<name>.log`; with `readLines` the caller reads stderr and writes it there.
 */
function spawnMember(dep: LocalDeployment, name: string, args: string[], readLines: boolean): Member {
  const probeFile = join(dep.dir, `probe-${name}.jsonl`);
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', PROBE, BIN, ...args, '--config', dep.configPath],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        COHORT_SOAK_PROBE_FILE: probeFile,
      },
    },
  );
  const log = createWriteStream(join(dep.dir, `${name}.log`));
  if (readLines) {
    // Whole lines from both streams, so a human line never lands inside a JSON one.
    createInterface({ input: child.stdout! }).on('line', (line) => log.write(`${line}\n`));
  } else {
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
  }
  return { name, child, log, probeFile };
}

/** nats-server's state at a probe, from its monitoring endpoint (/varz, /jsz). */
interface NatsState {
  readonly round: number;
  readonly memMiB: number;
  readonly connections: number;
  readonly subscriptions: number;
  readonly streams: number;
  readonly consumers: number;
  readonly messages: number;
  readonly storedMiB: number;
}

async function readNatsState(port: number, round: number): Promise<NatsState | undefined> {
  try {
    const get = async (path: string) =>
      (await (await fetch(`http://127.0.0.1:${port}${path}`)).json()) as Record<string, number>;
    const [varz, jsz] = await Promise.all([get('/varz'), get('/jsz')]);
    return {
      round,
      memMiB: Math.round((varz.mem! / 2 ** 20) * 10) / 10,
      connections: varz.connections!,
      subscriptions: varz.subscriptions!,
      streams: jsz.streams!,
      consumers: jsz.consumers!,
      messages: jsz.messages!,
      storedMiB: Math.round((jsz.bytes! / 2 ** 20) * 10) / 10,
    };
  } catch {
    return undefined;
  }
}

/** What the rounds gave: per-round decision times, commits and aborts, and the RSS samples. */
interface SoakRun {
  readonly series: RssSeries;
  /** Live memory after a full GC, per Node member, every {@link PROBE_EVERY} rounds. */
  readonly live: LiveSeries;
  /** What nats-server held at each probe (its monitoring endpoint). */
  readonly nats: NatsState[];
  readonly periodsMs: number[];
  readonly committed: number;
  readonly aborted: number;
  readonly abortReasons: string[];
  readonly wallS: number;
}

/** Starts every member, runs `TOTAL` rounds (warm-up and measured), sampling RSS of every process at each decision. */
async function soak(
  dep: LocalDeployment,
  siteConfigs: ReadonlyMap<string, string>,
  monitorPort: number,
): Promise<SoakRun> {
  const members: Member[] = [];
  try {
    for (const a of dep.aggregators) members.push(spawnMember(dep, a, ['aggregator', '--member', a], false));
    for (const s of dep.sites)
      members.push(
        spawnMember(dep, s, ['agent', '--member', s, '--site-config', siteConfigs.get(s)!], false),
      );
    const coordinator = spawnMember(dep, 'coordinator', ['coordinator', '--rounds', String(TOTAL)], true);
    members.push(coordinator);
    const pids = new Map<string, number>([['nats-server', dep.nats.pid]]);
    for (const m of [coordinator, ...members.filter((m) => m !== coordinator)])
      pids.set(m.name, m.child.pid!);
    const series = new RssSeries(pids);
    const periodsMs: number[] = [];
    const probeRounds: number[] = [];
    const natsProbes: Promise<NatsState | undefined>[] = [];
    const abortReasons: string[] = [];
    let committed = 0;
    let last = performance.now();
    const t0 = last;
    const lines = createInterface({ input: coordinator.child.stderr! });
    lines.on('line', (line) => {
      coordinator.log.write(`${line}\n`);
      const m = ROUND_LINE.exec(line);
      if (m === null) {
        // The evaluation and snapshot lines of every round would drown the progress lines.
        if (!line.startsWith(' ') && !line.startsWith('snapshot ')) say(line);
        return;
      }
      const now = performance.now();
      const round = Number(m[1]);
      if (round > 1) periodsMs.push(now - last);
      last = now;
      series.sample(round);
      if (round % PROBE_EVERY === 0) {
        probeRounds.push(round);
        for (const m of members) if (m.child.exitCode === null) m.child.kill('SIGUSR2');
        natsProbes.push(readNatsState(monitorPort, round));
      }
      if (m[2] === 'ABORT') abortReasons.push(line);
      else committed++;
      if (round % 50 === 0 || m[2] === 'ABORT') say(line);
    });
    const exited = new Promise<number>((resolve) => coordinator.child.on('exit', (c) => resolve(c ?? 1)));
    let stalled = false;
    const watchdog = setInterval(() => {
      const dead = members.find((m) => m.child.exitCode !== null && m !== coordinator);
      if (performance.now() - last > STALL_MS || dead !== undefined) {
        stalled = true;
        say(dead === undefined ? 'no decision for 3 min' : `${dead.name} exited with ${dead.child.exitCode}`);
        coordinator.child.kill('SIGKILL');
      }
    }, 1000);
    const code = await exited;
    clearInterval(watchdog);
    if (code !== 0 || stalled)
      throw new Error(
        `soak: coordinator exited with ${code}${stalled ? ' (stalled)' : ''}; logs in ${dep.dir}`,
      );
    // The last probe's lines are written within a GC of the signal.
    await new Promise((r) => setTimeout(r, 2000));
    return {
      series,
      live: readLiveSeries(probeRounds, members),
      nats: (await Promise.all(natsProbes)).filter((p) => p !== undefined),
      periodsMs,
      committed,
      aborted: abortReasons.length,
      abortReasons,
      wallS: (performance.now() - t0) / 1000,
    };
  } finally {
    for (const m of members) if (m.child.exitCode === null) m.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    for (const m of members) if (m.child.exitCode === null) m.child.kill('SIGKILL');
    await Promise.all(members.map((m) => new Promise((r) => m.log.end(r))));
  }
}

/** The table: per process RSS at the end beside after warm-up, growth against the goal; round times. */
function soakRows(run: SoakRun, params: number): BenchRow[] {
  const { warmUp, baseline, end } = soakWindows(TOTAL, WARMUP);
  const base = `r${baseline[0]}–${baseline[1]}`;
  const last = `r${end[0]}–${end[1]}`;
  const rows: BenchRow[] = [];
  const envelope = rssEnvelopeGrowth(run.series, TOTAL, WARMUP, GROWTH_SPAN);
  const half = (TOTAL - WARMUP) / 2;
  for (const [name, g] of rssGrowth(run.series, TOTAL, WARMUP)) {
    const e = envelope.get(name)!;
    rows.push(
      {
        section: 'rss',
        metric: `${name}: RSS after warm-up (median ${base})`,
        value: g.baseMiB,
        unit: 'MiB',
        compare: '',
        detail: true,
      },
      {
        section: 'rss',
        metric: `${name}: RSS at the end (median ${last})`,
        value: g.endMiB,
        unit: 'MiB',
        compare: `after warm-up ${g.baseMiB.toFixed(1)} MiB`,
      },
      {
        section: 'rss',
        metric: `${name}: growth after warm-up`,
        value: 100 * g.growth,
        unit: '%',
        compare: `< ${100 * GROWTH_GOAL}%`,
        pass: g.growth < GROWTH_GOAL,
      },
      {
        section: 'rss',
        metric: `${name}: peak growth (95th percentile, 2nd vs 1st half of the measured rounds, per ${GROWTH_SPAN} rounds)`,
        value: 100 * e.growth,
        unit: '%',
        compare: `${e.baseMiB.toFixed(1)} → ${e.endMiB.toFixed(1)} MiB over ${half} rounds; < ${100 * GROWTH_GOAL}%`,
        pass: e.growth < GROWTH_GOAL,
      },
    );
  }
  for (const [name, g] of liveGrowth(run.live, TOTAL, WARMUP)) {
    rows.push({
      section: 'live memory',
      metric: `${name}: heap + external after a full GC, growth after warm-up`,
      value: 100 * g.growth,
      unit: '%',
      compare: `${g.baseMiB.toFixed(1)} → ${g.endMiB.toFixed(1)} MiB (median ${base} → ${last}, one probe per ${PROBE_EVERY} rounds)`,
    });
  }
  const sec = 'rounds';
  rows.push(
    {
      section: sec,
      metric: `round time (decision to decision), P50`,
      value: quantile(run.periodsMs, 0.5),
      unit: 'ms',
      compare: '',
    },
    {
      section: sec,
      metric: 'round time, P99',
      value: quantile(run.periodsMs, 0.99),
      unit: 'ms',
      compare: '',
    },
    {
      section: sec,
      metric: 'rounds committed',
      value: run.committed,
      unit: 'rounds',
      compare: `${TOTAL}`,
      pass: run.committed === TOTAL,
    },
    {
      section: sec,
      metric: 'rounds aborted',
      value: run.aborted,
      unit: 'rounds',
      compare: '0',
      pass: run.aborted === 0,
    },
    {
      section: sec,
      metric: `wall time of ${TOTAL} rounds (warm-up ${warmUp})`,
      value: run.wallS,
      unit: 's',
      compare: `logreg, ${params} params`,
    },
  );
  return rows;
}

/** RSS per process against round, written to docs/soak-rss.svg. */
function writePlot(series: RssSeries): void {
  const plot = renderLinePlot({
    title: `Soak: RSS per process over ${TOTAL} rounds, the last ${ROUNDS} measured (he, ${SITES} sites, ${AGGREGATORS} aggregators)`,
    xLabel: 'round',
    yLabel: 'RSS (MiB)',
    yMin: 0,
    series: [...series.rss].map(([name, values]) => ({
      name,
      points: values.map((v, i) => [series.rounds[i]!, Math.round(v * 10) / 10] as const),
    })),
  });
  mkdirSync(dirname(PLOT), { recursive: true });
  writeFileSync(PLOT, plot);
}

/**
 * Soak benchmark, `npm run bench -- soak`: `COHORT_BENCH_SOAK_WARMUP` rounds (default 500), then
 * `COHORT_BENCH_SOAK_ROUNDS` measured rounds (default 1000) of a
 * logistic regression on `COHORT_BENCH_SOAK_ROWS` MNIST rows per site (default 400), every member
 * a separate process; RSS growth of each process after warm-up against the < 10% goal.
 */
export async function runSoakBench(): Promise<BenchRow[]> {
  if (!Number.isInteger(ROUNDS) || ROUNDS < 40)
    throw new Error('COHORT_BENCH_SOAK_ROUNDS must be an integer ≥ 40');
  if (!Number.isInteger(WARMUP) || WARMUP < 20)
    throw new Error('COHORT_BENCH_SOAK_WARMUP must be an integer ≥ 20');
  if (!Number.isInteger(ROWS_PER_SITE) || ROWS_PER_SITE < 20)
    throw new Error('COHORT_BENCH_SOAK_ROWS must be an integer ≥ 20');
  const dir = mkdtempSync(join(tmpdir(), 'cohort-soak-'));
  let dep: LocalDeployment | undefined;
  let ok = false;
  try {
    const monitorPort = await freePort();
    dep = await createLocalDeployment({
      dir,
      federation: 'soak',
      // nats-server's monitoring endpoint: what it holds at each probe (subscriptions, consumers, stored messages).
      natsConfig: `http: "127.0.0.1:${monitorPort}"`,
      aggregators: AGGREGATORS,
      sites: SITES,
      // Schema defaults for everything else, retention included: the log and the aggregate and
      // snapshot stores keep every version, site updates are kept 30 days (longer than the soak),
      // a site keeps 50 past models in memory and writes a snapshot every 10 commits.
      overrides: {
        round: {
          count: TOTAL,
          deadlineMs: 30_000,
          voteTimeoutMs: 30_000,
          heartbeatMs: 500,
          missedHeartbeats: 10,
        },
        learning: { model: 'logreg', trainLimit: SITES * ROWS_PER_SITE },
        codec: { clip: 0.02 },
        data: mnistDataContract(),
        log: { level: 'warn' },
      },
    });
    const siteConfigs = writeDemoSiteData({
      dir,
      sites: dep.sites,
      seed: dep.config.learning.initSeed,
      validationFraction: 0.1,
      trainLimit: SITES * ROWS_PER_SITE,
    });
    const params = federationGenesis(dep.config).parameters.length;
    say(
      `${WARMUP} + ${ROUNDS} rounds, logreg (${params} params), ${ROWS_PER_SITE} rows per site; working folder ${dir}`,
    );
    const run = await soak(dep, siteConfigs, monitorPort);
    const rows = soakRows(run, params);
    printTable(
      `Soak benchmark (he: ${SITES} sites / ${AGGREGATORS} aggregators as processes, ${WARMUP} warm-up + ${ROUNDS} measured rounds in ${run.wallS.toFixed(0)} s)`,
      rows,
    );
    writePlot(run.series);
    const path = writeResults('soak', rows, {
      windows: soakWindows(TOTAL, WARMUP),
      abortLines: run.abortReasons,
      samples: run.series.toJson(),
      live: run.live,
      nats: run.nats,
    });
    say(`wrote ${path} and ${PLOT}`);
    ok = true;
    return rows;
  } finally {
    await dep?.stop();
    if (ok) rmSync(dir, { recursive: true, force: true });
    else say(`kept ${dir}`);
  }
}
