// `npm run bench -- hostile`: what refusing a flood of junk costs the coordinator and an
// aggregator, as ratios to an honest round of the same federation in the same run (issue 8).
//
// One local federation (private nats-server, mutual TLS, NKEY permissions; logreg, 4 sites,
// 1 aggregator). The coordinator and the aggregator run in THIS process, so the event-loop delay
// histogram (perf_hooks.monitorEventLoopDelay), event-loop utilisation and CPU time measured here
// are theirs (one loop, shared by both). site-1..3 run as child processes (`cohort agent`), so
// their training and SEAL work does not land on this loop; the flooder is another child process
// holding site-4's own credentials (so it passes NATS authentication and permissions).
//
//   honest   R rounds with site-1..3; rounds 2..R measured from RoundOpen to the decision.
//   idle     the agents stopped, the coordinator restarted and waiting for sites: nothing to do.
//   floods   FLOOD_MS each, fired as fast as the flooder can publish (raw NATS publish of
//            correctly framed Cohort chunks, a flush every batch: what `transport.publish` sends,
//            without its per-message flush); then until the counters stop moving:
//     junk heartbeat   2 KiB random bytes on heartbeat.site-4 (MALFORMED before any signature work)
//     wrong signer     signed heartbeats on heartbeat.site-4: signer "site-3", or "site-4" under a
//                      fresh key (WRONG_SIGNER before the signature is verified)
//     oversize         1 KiB chunks declaring a 64 MiB message on heartbeat.site-4 (transport OVERSIZE)
//     junk block       framed (COHB, block kind) random bodies, as long as a block may be (the
//                      aggregator's cap, ~131 KiB at N = 8192), on update.agg-1.site-4
//                      (MALFORMED before any SEAL work)
// Refusals are read from the services' own counters (CoordinatorStats.rejected/rejectedByReason,
// AggregatorStats.rejected/rejections/transportDrops); per-sender rate limits (control 50/s,
// frames 2000/s) turn most of a flood into RATE_LIMITED transport drops, which count as refusals.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { generateSigningKeyPair } from '../crypto/signature/index.ts';
import { loadConfig } from '../src/config/index.ts';
import {
  FRAME_HEADER_BYTES,
  FRAME_KIND,
  frame,
  maxBlockFrameBytes,
  sealControl,
} from '../src/protocol/index.ts';
import { type AggregatorService, startAggregator } from '../src/services/aggregator/index.ts';
import {
  type CoordinatorEvent,
  type CoordinatorHandle,
  startCoordinator,
} from '../src/services/coordinator/index.ts';
import { createLocalDeployment, type MemberContext, openMember } from '../src/services/index.ts';
import { crcHex, FRAME_HEADERS } from '../src/transport/index.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

const T0 = performance.now();
const say = (s: string) =>
  process.stderr.write(`[hostile bench ${((performance.now() - T0) / 1000).toFixed(1)} s] ${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/** Training rounds of the honest phase; rounds 2..ROUNDS are measured. */
const ROUNDS = Number(process.env['COHORT_BENCH_HOSTILE_ROUNDS'] ?? 3);
/** Duration of each flood. */
const FLOOD_MS = Number(process.env['COHORT_BENCH_HOSTILE_FLOOD_MS'] ?? 5000);
const IDLE_MS = 2000;
/** Messages published between two flushes by the flooder. */
const BATCH = 256;

const KINDS = ['junk-heartbeat', 'wrong-signer', 'oversize', 'junk-block'] as const;
type Kind = (typeof KINDS)[number];
const TARGET: Record<Kind, 'coordinator' | 'aggregator'> = {
  'junk-heartbeat': 'coordinator',
  'wrong-signer': 'coordinator',
  oversize: 'coordinator',
  'junk-block': 'aggregator',
};
const LABEL: Record<Kind, string> = {
  'junk-heartbeat': 'junk heartbeats (2 KiB random)',
  'wrong-signer': 'heartbeats, wrong signer / key',
  oversize: 'oversize (1 KiB chunks, 64 MiB declared)',
  'junk-block': 'junk blocks (framed, at the block cap)',
};

// ---- measurement ---------------------------------------------------------------------------

/** Event-loop delay, utilisation and CPU of this process over one or more enabled spans. */
class LoopWindow {
  readonly #h = monitorEventLoopDelay({ resolution: 1 });
  #t0 = 0;
  #cpu0: NodeJS.CpuUsage = { user: 0, system: 0 };
  #elu0 = performance.eventLoopUtilization();
  #on = false;
  wallMs = 0;
  cpuMs = 0;
  activeMs = 0;

  start(): void {
    if (this.#on) return;
    this.#on = true;
    this.#h.enable();
    this.#t0 = performance.now();
    this.#cpu0 = process.cpuUsage();
    this.#elu0 = performance.eventLoopUtilization();
  }

  stop(): void {
    if (!this.#on) return;
    this.#on = false;
    this.#h.disable();
    const cpu = process.cpuUsage(this.#cpu0);
    const elu = performance.eventLoopUtilization(this.#elu0);
    this.wallMs += performance.now() - this.#t0;
    this.cpuMs += (cpu.user + cpu.system) / 1000;
    this.activeMs += elu.active;
  }

  result(): LoopStats {
    const ns = (v: number) => (Number.isFinite(v) ? v / 1e6 : 0);
    return {
      wallMs: this.wallMs,
      p50StallMs: ns(this.#h.percentile(50)),
      p99StallMs: ns(this.#h.percentile(99)),
      maxStallMs: ns(this.#h.max),
      elu: this.wallMs > 0 ? this.activeMs / this.wallMs : 0,
      cpuMsPerS: this.wallMs > 0 ? (this.cpuMs * 1000) / this.wallMs : 0,
      cpuMs: this.cpuMs,
      activeMs: this.activeMs,
    };
  }
}

interface LoopStats {
  readonly wallMs: number;
  readonly p50StallMs: number;
  readonly p99StallMs: number;
  readonly maxStallMs: number;
  /** Event-loop utilisation (busy share of the loop). */
  readonly elu: number;
  /** CPU time of this process per wall second (user + system, every thread). */
  readonly cpuMsPerS: number;
  readonly cpuMs: number;
  /** Event-loop busy time. */
  readonly activeMs: number;
}

interface FloodResult {
  readonly kind: Kind;
  readonly target: 'coordinator' | 'aggregator';
  readonly sent: number;
  readonly sendMs: number;
  /** Bytes of each junk message. */
  readonly bytes: number;
  readonly refused: number;
  readonly refusedPerS: number;
  /** Refusal reasons counted during the flood (target's counters; transport drops prefixed). */
  readonly reasons: Record<string, number>;
  /** Refusals counted by the other service during the flood (should be 0). */
  readonly otherRefused: number;
  readonly loop: LoopStats;
  /** CPU of this process per refusal, µs. */
  readonly cpuUsPerRefusal: number;
  /** Event-loop busy time per refusal, µs (above the idle loop's). */
  readonly loopUsPerRefusal: number;
}

function diff(after: Readonly<Record<string, number>>, before: Readonly<Record<string, number>>) {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

// ---- the flooder (child process) -----------------------------------------------------------

/** `node bench/hostile.ts --flooder <config>`: site-4's credentials; one flood per stdin line. */
async function flooderMain(configPath: string): Promise<void> {
  const config = loadConfig(configPath);
  const ctx = await openMember(config, 'site-4');
  const nc = ctx.transport.connection;
  const s = ctx.subjects;
  const federation = config.federation.id;
  const junk = (n: number) => new Uint8Array(randomBytes(n));

  const hb = (signer: string, key: typeof ctx.signing) =>
    sealControl(
      'heartbeat',
      {
        federation,
        member: 'site-4',
        role: 'site',
        sentUnixMs: Date.now(),
        head: new Uint8Array(32),
        examples: 100,
        state: 'idle',
        height: 0,
      },
      signer,
      key,
    );
  const fake = generateSigningKeyPair(config.crypto.signature.algorithm);
  const pools: Record<Kind, Uint8Array[]> = {
    'junk-heartbeat': Array.from({ length: 64 }, () => junk(2048)),
    'wrong-signer': Array.from({ length: 32 }, (_, i) =>
      i % 2 === 0 ? hb('site-3', ctx.signing) : hb('site-4', fake),
    ),
    oversize: Array.from({ length: 64 }, () => junk(1024)),
    // As large as a block may be: the most bytes one refused message makes the aggregator read.
    'junk-block': Array.from({ length: 64 }, () =>
      frame(FRAME_KIND.block, junk(maxBlockFrameBytes(ctx.ckks.maxCiphertextBytes) - FRAME_HEADER_BYTES)),
    ),
  };
  const subject: Record<Kind, string> = {
    'junk-heartbeat': s.heartbeat('site-4'),
    'wrong-signer': s.heartbeat('site-4'),
    oversize: s.heartbeat('site-4'),
    'junk-block': s.update('agg-1', 'site-4'),
  };
  const crcs = new Map<Uint8Array, string>();
  for (const pool of Object.values(pools)) for (const d of pool) crcs.set(d, crcHex(d));
  const DECLARED = 64 * 1024 * 1024;

  const flood = async (kind: Kind, ms: number) => {
    const pool = pools[kind];
    const subj = subject[kind];
    let sent = 0;
    const t0 = performance.now();
    const end = t0 + ms;
    while (performance.now() < end) {
      for (let i = 0; i < BATCH; i++) {
        const data = pool[(sent + i) % pool.length]!;
        const h = natsHeaders();
        h.set(FRAME_HEADERS.id, randomBytes(16).toString('base64url'));
        if (kind === 'oversize') {
          h.set(FRAME_HEADERS.chunk, `0/${DECLARED / data.length}`);
          h.set(FRAME_HEADERS.length, String(DECLARED));
        } else {
          h.set(FRAME_HEADERS.chunk, '0/1');
          h.set(FRAME_HEADERS.length, String(data.length));
        }
        h.set(FRAME_HEADERS.crc, crcs.get(data)!);
        nc.publish(subj, data, { headers: h });
      }
      sent += BATCH;
      await nc.flush();
    }
    return { sent, sendMs: performance.now() - t0, bytes: pool[0]!.length };
  };

  process.stdout.write('@@ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [kind, ms] = line.trim().split(' ');
    if (kind === 'quit') break;
    const r = await flood(kind as Kind, Number(ms));
    process.stdout.write(`@@${JSON.stringify(r)}\n`);
  }
  await ctx.close();
  process.exit(0);
}

class Flooder {
  readonly #child: ChildProcess;
  readonly #lines: AsyncIterator<string>;

  constructor(configPath: string) {
    this.#child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--flooder', configPath], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.#lines = createInterface({ input: this.#child.stdout! })[Symbol.asyncIterator]();
  }

  async #next(): Promise<string> {
    for (;;) {
      const r = await this.#lines.next();
      if (r.done) throw new Error('the flooder exited');
      if (r.value.startsWith('@@')) return r.value.slice(2);
    }
  }

  async ready(): Promise<void> {
    if ((await this.#next()) !== 'ready') throw new Error('flooder did not start');
  }

  async flood(kind: Kind, ms: number): Promise<{ sent: number; sendMs: number; bytes: number }> {
    this.#child.stdin!.write(`${kind} ${ms}\n`);
    return JSON.parse(await this.#next()) as { sent: number; sendMs: number; bytes: number };
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    this.#child.stdin!.write('quit\n');
    await exited(this.#child, 5000);
  }
}

async function exited(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  if (await Promise.race([done.then(() => true), sleep(ms).then(() => false)])) return;
  child.kill('SIGKILL');
  await done;
}

// ---- the run -------------------------------------------------------------------------------

interface HostileResult {
  readonly honest: LoopStats & { readonly rounds: number; readonly roundMs: number };
  readonly idle: LoopStats;
  readonly floods: readonly FloodResult[];
  readonly connectionEvents: Record<string, number>;
}

async function run(): Promise<HostileResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-hostile-bench-'));
  const dep = await createLocalDeployment({
    dir,
    federation: 'hostile',
    aggregators: 1,
    sites: 4,
    overrides: {
      round: {
        deadlineMs: 60_000,
        voteTimeoutMs: 60_000,
        heartbeatMs: 500,
        missedHeartbeats: 4,
        quorum: 4, // site-1..3 and agg-1: site-4 is the flooder's
      },
      learning: { model: 'logreg', trainLimit: 600, testLimit: 100 },
      nats: { timeoutMs: 30_000 },
      log: { level: (process.env['COHORT_BENCH_HOSTILE_LOG'] ?? 'error') as 'error' },
    },
  });
  const contexts: MemberContext[] = [];
  const children: ChildProcess[] = [];
  let aggregator: AggregatorService | undefined;
  let handle: CoordinatorHandle | undefined;
  let flooder: Flooder | undefined;
  const connectionEvents: Record<string, number> = {};
  try {
    say('federation up');
    const coord = await openMember(dep.config, 'coordinator');
    contexts.push(coord);
    const agg = await openMember(dep.config, 'agg-1');
    contexts.push(agg);
    for (const [who, c] of [
      ['coordinator', coord],
      ['agg-1', agg],
    ] as const) {
      void (async () => {
        for await (const st of c.transport.connection.status()) {
          const k = `${who}:${st.type}`;
          connectionEvents[k] = (connectionEvents[k] ?? 0) + 1;
        }
      })();
    }
    aggregator = await startAggregator(agg);
    say('sites 1-3 start as child processes (cohort agent)');
    for (const site of ['site-1', 'site-2', 'site-3']) {
      const child = spawn(
        process.execPath,
        ['bin/cohort.js', 'agent', '--config', dep.configPath, '--member', site],
        { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let err = '';
      child.stderr!.on('data', (b: Buffer) => {
        err = (err + b.toString()).slice(-2000);
      });
      child.once('exit', (code, signal) => {
        if (code !== 0 && signal !== 'SIGTERM') say(`${site} exited ${code ?? signal}: ${err}`);
      });
      children.push(child);
    }
    flooder = new Flooder(dep.configPath);

    // ---- honest rounds ----
    const honestWin = new LoopWindow();
    const onHonest = (e: CoordinatorEvent) => {
      if (e.type === 'round-open' && e.round >= 2) honestWin.start();
      if (e.type === 'decision' && e.summary.round >= 2) honestWin.stop();
    };
    handle = startCoordinator(coord, { rounds: ROUNDS, switchWaitMs: 30_000, onEvent: onHonest });
    let guard: NodeJS.Timeout | undefined;
    const summary = await Promise.race([
      handle.done,
      new Promise<never>((_, reject) => {
        guard = setTimeout(() => reject(new Error('the honest rounds did not finish in 180 s')), 180_000);
      }),
    ]).finally(() => clearTimeout(guard));
    handle = undefined;
    if (summary.committed !== ROUNDS)
      throw new Error(`only ${summary.committed} of ${ROUNDS} rounds committed`);
    const measured = summary.rounds.filter((r) => r.round >= 2);
    const roundMs = measured.reduce((a, r) => a + r.durationMs, 0) / measured.length;
    const honest = { ...honestWin.result(), rounds: measured.length, roundMs };
    say(`honest: ${ROUNDS} rounds, ${roundMs.toFixed(0)} ms each after the first`);

    // ---- stop the sites, restart the coordinator: it waits for sites, subscribed ----
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => exited(c, 15_000)));
    say('sites stopped');
    await flooder.ready();
    say('flooder ready');
    handle = startCoordinator(coord, { rounds: 0 });
    const h2 = handle;
    const window = dep.config.round.missedHeartbeats * dep.config.round.heartbeatMs;
    await sleep(window + 1000);
    if (h2.stats().phase !== 'waiting')
      throw new Error(`the coordinator is ${h2.stats().phase}, not waiting`);

    say('coordinator restarted, waiting for sites');
    const idleWin = new LoopWindow();
    idleWin.start();
    await sleep(IDLE_MS);
    idleWin.stop();
    const idle = idleWin.result();

    // ---- floods ----
    const floods: FloodResult[] = [];
    const only = process.env['COHORT_BENCH_HOSTILE_KINDS']?.split(',');
    for (const kind of KINDS) {
      if (only !== undefined && !only.includes(kind)) continue;
      const target = TARGET[kind];
      const counts = () => {
        const c = h2.stats();
        const a = aggregator!.stats();
        const aggReasons: Record<string, number> = { ...a.rejections };
        for (const [k, v] of Object.entries(a.transportDrops)) aggReasons[`TRANSPORT_${k}`] = v;
        return {
          coordinator: c.rejected,
          aggregator: a.rejected,
          reasons: target === 'coordinator' ? c.rejectedByReason : aggReasons,
        };
      };
      const before = counts();
      const win = new LoopWindow();
      win.start();
      const sent = await flooder.flood(kind, FLOOD_MS);
      // Until the target's counter stops moving (what was queued is refused too).
      let last = -1;
      for (let i = 0; i < 100; i++) {
        const now = counts()[target];
        if (now === last) break;
        last = now;
        await sleep(100);
      }
      win.stop();
      const after = counts();
      const other = target === 'coordinator' ? 'aggregator' : 'coordinator';
      const refused = after[target] - before[target];
      const loop = win.result();
      const r: FloodResult = {
        kind,
        target,
        ...sent,
        refused,
        refusedPerS: (refused * 1000) / loop.wallMs,
        reasons: diff(after.reasons, before.reasons),
        otherRefused: after[other] - before[other],
        loop,
        cpuUsPerRefusal: refused > 0 ? (loop.cpuMs * 1000) / refused : 0,
        loopUsPerRefusal: refused > 0 ? ((loop.activeMs - idle.elu * loop.wallMs) * 1000) / refused : 0,
      };
      floods.push(r);
      say(
        `${kind}: sent ${r.sent} in ${r.sendMs.toFixed(0)} ms, ${target} refused ${refused} (${JSON.stringify(r.reasons)}), p99 ${loop.p99StallMs.toFixed(1)} ms, max ${loop.maxStallMs.toFixed(1)} ms`,
      );
      await sleep(1500); // let the rate-limit buckets refill between kinds
    }
    return { honest, idle, floods, connectionEvents: { ...connectionEvents } };
  } finally {
    say('teardown');
    await flooder?.close().catch(() => undefined);
    say('flooder closed');
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => exited(c, 10_000)));
    await handle?.stop().catch(() => undefined);
    say('coordinator stopped');
    await aggregator?.stop().catch(() => undefined);
    say('aggregator stopped');
    for (const c of contexts) await c.close().catch(() => undefined);
    say('contexts closed');
    await dep.stop();
    say('nats stopped');
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  }
}

export async function runHostileBench(): Promise<void> {
  const r = await run();
  const h = r.honest;
  const honestCpuPerRound = (h.cpuMs / h.wallMs) * h.roundMs;
  const rows: BenchRow[] = [];
  // Each loop figure of a flood (or idle) beside the honest round's, in the same unit, same run.
  const honest = (value: number) => ({ metric: 'honest round', value });
  const loopRows = (section: string, l: LoopStats, floors: boolean) => {
    const floor = (value: number) => (floors ? { floor: honest(value) } : {});
    rows.push(
      {
        section,
        metric: 'event-loop stall p99',
        value: l.p99StallMs,
        unit: 'ms',
        compare: floors ? '' : 'baseline',
        ...floor(h.p99StallMs),
      },
      {
        section,
        metric: 'event-loop stall max',
        value: l.maxStallMs,
        unit: 'ms',
        compare: floors ? '' : 'baseline',
        ...floor(h.maxStallMs),
      },
      {
        section,
        metric: 'event-loop utilisation',
        value: l.elu * 100,
        unit: '%',
        compare: floors ? '' : 'baseline',
        ...floor(h.elu * 100),
      },
      {
        section,
        metric: 'CPU per wall second',
        value: l.cpuMsPerS,
        unit: 'ms/s',
        compare: floors ? '' : 'baseline',
        ...floor(h.cpuMsPerS),
      },
    );
  };
  const honestSection = `honest round (rounds 2-${h.rounds + 1}, 3 sites)`;
  rows.push({
    section: honestSection,
    metric: 'one committed round',
    value: h.roundMs,
    unit: 'ms',
    compare: 'baseline',
  });
  loopRows(honestSection, h, false);
  rows.push({
    section: honestSection,
    metric: 'CPU per round',
    value: honestCpuPerRound,
    unit: 'ms',
    compare: 'baseline',
  });
  loopRows('idle (no round, no flood)', r.idle, true);
  for (const f of r.floods) {
    const section = `${LABEL[f.kind]} → ${f.target}`;
    const top = Object.entries(f.reasons)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k.replace('TRANSPORT_', 'T_')} ${v}`)
      .join(', ');
    rows.push(
      {
        section,
        metric: 'sent by the flooder',
        value: (f.sent * 1000) / f.sendMs,
        unit: 'msg/s',
        compare: `${f.sent} × ${f.bytes.toLocaleString('en-US')} B in ${(f.sendMs / 1000).toFixed(1)} s (${((f.sent * f.bytes) / f.sendMs / 1000).toFixed(0)} MB/s)`,
      },
      {
        section,
        metric: `refusals/s at the ${f.target}`,
        value: f.refusedPerS,
        unit: '/s',
        compare: `${f.refused} of ${f.sent}: ${top}`,
      },
    );
    loopRows(section, f.loop, true);
    rows.push({
      section,
      metric: 'CPU per refusal',
      value: f.cpuUsPerRefusal,
      unit: 'µs',
      compare:
        f.cpuUsPerRefusal > 0
          ? `${Math.round((honestCpuPerRound * 1000) / f.cpuUsPerRefusal)} refusals = 1 round's CPU`
          : '',
    });
    rows.push({
      section,
      metric: 'event-loop time per refusal (above idle)',
      value: f.loopUsPerRefusal,
      unit: 'µs',
      compare:
        f.loopUsPerRefusal > 0
          ? `the loop saturates near ${Math.round(1e6 / f.loopUsPerRefusal).toLocaleString('en-US')} refusals/s`
          : '',
    });
  }
  printTable(
    'Refusing junk beside an honest round (coordinator + aggregator in this process; sites and flooder are child processes)',
    rows,
  );
  const lost = r.floods.filter((f) => f.refused < f.sent);
  for (const f of lost)
    console.log(`note: ${f.kind}: ${f.sent - f.refused} of ${f.sent} sent were never counted as refused`);
  for (const f of r.floods.filter((f) => f.otherRefused !== 0))
    console.log(`note: ${f.kind}: the other service counted ${f.otherRefused} refusals`);
  if (Object.keys(r.connectionEvents).length > 0)
    console.log(`note: connection events of the services: ${JSON.stringify(r.connectionEvents)}`);
  const path = writeResults('hostile', rows, {
    floodMs: FLOOD_MS,
    rounds: ROUNDS,
    honest: r.honest,
    idle: r.idle,
    floods: r.floods,
    connectionEvents: r.connectionEvents,
  });
  console.log(`\nwrote ${path}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--flooder') {
  await flooderMain(process.argv[3]!);
}
