// `npm run bench -- audit [--rounds N] [--sites N] [--aggregators N]`: what an audit costs beside
// what producing the log cost, measured side by side in one run (issue 10).
//
// The log is produced for real: the services run in this process over a private nats-server (a
// coordinator, 2–4 aggregators, N sites, default 100 rounds × 16 sites), training a logistic
// regression on a few hundred MNIST rows per site in `he` mode (real CKKS, real signatures, every
// site update kept in the updates store). The federation is timed from the coordinator's start to
// its last decision. Then the auditor member (`auditor-1`, a read-only NATS user) audits it:
//   export   `exportAuditBundle` of the live log, as `cohort audit export` does;
//   bundle   `verifyAudit` of the decoded bundle (offline): every signature, link, history rule
//            and commit hash, and every aggregate re-added from its stored contributions;
//   live     `verifyAudit` of the live log through the auditor's connection (`cohort audit verify`).
// Each audit must verify with every aggregate recomputed, or the bench throws: a run never measures
// a failing audit.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wipeSigningKeyPair } from '../crypto/signature/index.ts';
import {
  type AuditReport,
  type AuditTrust,
  bundleAuditSource,
  decodeAuditBundle,
  exportAuditBundle,
  loadBundleSigner,
  resolveAuditTrust,
  verifyAudit,
} from '../src/audit/index.ts';
import { trustSources, withLiveSource } from '../src/cli/commands/audit-session.ts';
import { type AgentService, startAgent } from '../src/services/agent/index.ts';
import { type AggregatorService, startAggregator } from '../src/services/aggregator/index.ts';
import { type RoundSummary, startCoordinator } from '../src/services/coordinator/index.ts';
import { createLocalDeployment, type MemberContext, openMember } from '../src/services/index.ts';
import { type BenchRow, printTable, writeResults } from './table.ts';

const say = (s: string) => process.stderr.write(`[audit bench] ${s}\n`);

/** Training rows per site: enough to train, few enough that a round is short. */
const ROWS_PER_SITE = 300;
const FEDERATION = 'auditbench';
const AUDITOR = 'auditor-1';

interface Shape {
  readonly rounds: number;
  readonly sites: number;
  readonly aggregators: number;
}

/** `--name N` or `--name=N` of the command line, a positive integer, else `fallback`. */
function flag(name: string, fallback: number): number {
  const argv = process.argv.slice(2);
  const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i < 0) return fallback;
  const raw = argv[i]!.includes('=') ? argv[i]!.slice(name.length + 3) : argv[i + 1];
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} takes a positive integer, got ${raw}`);
  return n;
}

/** What one audit measured. */
interface AuditTiming {
  readonly ms: number;
  readonly report: AuditReport;
}

/** What the run measured. */
interface AuditBenchResult {
  readonly shape: Shape;
  readonly federationMs: number;
  readonly committed: number;
  readonly aborted: number;
  /** Site updates summed into committed aggregates, as the coordinator reported them. */
  readonly contributors: number;
  readonly roundMs: number;
  readonly exportMs: number;
  readonly bundleBytes: number;
  readonly decodeMs: number;
  readonly bundle: AuditTiming;
  readonly live: AuditTiming;
}

/**
 * Throws unless `report` verified with no problem, nothing unchecked, and every committed
 * aggregate re-added byte-identical from exactly the contributions the coordinator summed.
 */
function assertComplete(what: string, report: AuditReport, rounds: readonly RoundSummary[]): void {
  const commits = rounds.filter((r) => r.commit && r.kind === 'round');
  const contributions = commits.reduce((a, r) => a + r.contributors, 0);
  const c = report.checked;
  const wrong: string[] = [];
  if (report.problems.length > 0) {
    const p = report.problems[0]!;
    wrong.push(`${report.problems.length} problem(s), the first ${p.code} at ${p.sequence}: ${p.message}`);
  }
  if (report.unchecked.length > 0) {
    const u = report.unchecked[0]!;
    wrong.push(`${report.unchecked.length} unchecked, the first ${u.code} at ${u.sequence}: ${u.message}`);
  }
  if (!report.verified) wrong.push('not verified');
  if (c.recomputed !== commits.length || c.aggregates !== commits.length) {
    wrong.push(`${c.recomputed} of ${commits.length} aggregates recomputed (${c.aggregates} read)`);
  }
  if (c.contributions !== contributions) {
    wrong.push(`${c.contributions} contributions re-added, the coordinator summed ${contributions}`);
  }
  if (wrong.length > 0) throw new Error(`the ${what} audit is not complete: ${wrong.join('; ')}`);
}

async function timedAudit(run: () => Promise<AuditReport>): Promise<AuditTiming> {
  const t0 = performance.now();
  const report = await run();
  return { ms: performance.now() - t0, report };
}

async function runFederation(shape: Shape): Promise<AuditBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cohort-audit-bench-'));
  const dep = await createLocalDeployment({
    dir,
    federation: FEDERATION,
    aggregators: shape.aggregators,
    sites: shape.sites,
    auditors: 1,
    overrides: {
      round: {
        deadlineMs: 120_000,
        voteTimeoutMs: 120_000,
        heartbeatMs: 200,
        missedHeartbeats: 25,
        minContributors: Math.min(3, shape.sites),
      },
      learning: {
        model: 'logreg',
        trainLimit: ROWS_PER_SITE * shape.sites,
        testLimit: 100,
        epochs: 1,
        batchSize: 20,
      },
      nats: { timeoutMs: 30_000 },
      log: { level: 'warn' },
    },
  });
  const contexts: MemberContext[] = [];
  const open = async (id: string) => {
    const c = await openMember(dep.config, id);
    contexts.push(c);
    return c;
  };
  const aggregators: AggregatorService[] = [];
  const agents: AgentService[] = [];
  const stopMembers = async () => {
    for (const a of agents.splice(0)) await a.stop().catch(() => undefined);
    for (const a of aggregators.splice(0)) await a.stop().catch(() => undefined);
    for (const c of contexts.splice(0)) await c.close().catch(() => undefined);
  };
  try {
    for (const a of dep.aggregators) aggregators.push(await startAggregator(await open(a)));
    for (const s of dep.sites) agents.push(await startAgent(await open(s)));
    const coord = await open('coordinator');
    say(`${shape.sites} sites, ${shape.aggregators} aggregators: ${shape.rounds} rounds…`);
    let lastDecision = 0;
    const t0 = performance.now();
    const summary = await startCoordinator(coord, {
      rounds: shape.rounds,
      switchWaitMs: 30_000,
      onEvent: (e) => {
        if (e.type !== 'decision') return;
        lastDecision = performance.now();
        const r = e.summary;
        if (r.round % 10 === 0 || r.round === shape.rounds || r.round <= 2) {
          const outcome = r.commit ? 'COMMIT' : `ABORT (${r.reason})`;
          say(`round ${r.round}: ${outcome}, ${r.contributors} contributors, ${r.durationMs} ms`);
        }
      },
    }).done;
    const federationMs = lastDecision - t0;
    // An ABORT is part of the log and audited like the rest; a run with no COMMIT re-adds nothing.
    if (summary.committed === 0) throw new Error(`none of ${shape.rounds} rounds committed`);
    if (summary.aborted > 0) say(`${summary.aborted} of ${summary.rounds.length} rounds aborted`);
    const contributors = summary.rounds
      .filter((r) => r.commit && r.kind === 'round')
      .reduce((a, r) => a + r.contributors, 0);
    const roundMs = summary.rounds.reduce((a, r) => a + r.durationMs, 0) / summary.rounds.length;
    say(`federation: ${(federationMs / 1000).toFixed(1)} s, ${roundMs.toFixed(0)} ms a round`);
    // The audit runs alone: no member is left to compete for the CPU.
    await stopMembers();

    const config = dep.config;
    const trust: AuditTrust = resolveAuditTrust(trustSources({}, config, FEDERATION));
    const options = { ckksParams: [config.crypto.ckks] };
    const chunks: Uint8Array[] = [];
    const te = performance.now();
    const signer = loadBundleSigner(config, AUDITOR);
    const exported = await withLiveSource(config, AUDITOR, (source) =>
      exportAuditBundle(source, { registry: trust.registry, genesis: trust.genesis, signer }, (c) => {
        chunks.push(c.slice());
      }),
    );
    wipeSigningKeyPair(signer.key);
    const exportMs = performance.now() - te;
    if (exported.aggregates !== 'included' || exported.contributionsIncluded !== 'included') {
      throw new Error(
        `the bundle lacks aggregates (${exported.aggregates}) or contributions (${exported.contributionsIncluded})`,
      );
    }
    const bytes = Buffer.concat(chunks);
    say(
      `exported ${exported.entries} entries, ${exported.contributions} contributions, ${bytes.length} bytes`,
    );
    const td = performance.now();
    const decoded = decodeAuditBundle(bytes, 'the bench bundle');
    const decodeMs = performance.now() - td;
    const bundle = await timedAudit(() => verifyAudit(bundleAuditSource(decoded), trust, options));
    assertComplete('bundle', bundle.report, summary.rounds);
    say(`bundle audit: ${bundle.ms.toFixed(0)} ms`);
    const live = await withLiveSource(config, AUDITOR, (source) =>
      timedAudit(() => verifyAudit(source, trust, options)),
    );
    assertComplete('live', live.report, summary.rounds);
    say(`live audit: ${live.ms.toFixed(0)} ms`);
    if (live.report.entries !== bundle.report.entries) {
      throw new Error(
        `the live audit read ${live.report.entries} entries, the bundle's ${bundle.report.entries}`,
      );
    }
    return {
      shape,
      federationMs,
      committed: summary.committed,
      aborted: summary.aborted,
      contributors,
      roundMs,
      exportMs,
      bundleBytes: bytes.length,
      decodeMs,
      bundle,
      live,
    };
  } finally {
    await stopMembers();
    await dep.stop();
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  }
}

/** The federation's time, the floor an audit's time is shown beside (same run, in ms). */
function federationFloor(federationMs: number): { metric: string; value: number } {
  return { metric: 'federation time, start → last decision', value: federationMs };
}

/** The rows of one audit: its time beside the federation's, and its rates. */
function auditRows(section: string, a: AuditTiming, federationMs: number): BenchRow[] {
  const s = a.ms / 1000;
  return [
    {
      section,
      metric: 'verify time',
      value: a.ms,
      unit: 'ms',
      compare: '',
      floor: federationFloor(federationMs),
    },
    { section, metric: 'records', value: a.report.entries / s, unit: 'records/s', compare: '' },
    {
      section,
      metric: 'contributions re-added',
      value: a.report.checked.contributions / s,
      unit: 'contributions/s',
      compare: '',
      detail: true,
    },
  ];
}

/** Runs the benchmark: prints the table and writes bench/results/audit.json. */
export async function runAuditBench(): Promise<void> {
  const sites = flag('sites', 16);
  const shape: Shape = {
    rounds: flag('rounds', 100),
    sites,
    aggregators: flag('aggregators', Math.min(sites, Math.max(2, Math.min(4, Math.ceil(sites / 4))))),
  };
  const r = await runFederation(shape);
  const report = r.bundle.report;
  const log = `log (${shape.rounds} rounds × ${shape.sites} sites, ${shape.aggregators} aggregators)`;
  const rows: BenchRow[] = [
    {
      section: log,
      metric: 'entries (records)',
      value: report.entries,
      unit: 'records',
      compare: '',
      detail: true,
    },
    {
      section: log,
      metric: 'contributions re-added',
      value: report.checked.contributions,
      unit: 'contributions',
      compare: `${report.checked.recomputed} aggregates recomputed`,
    },
    {
      section: log,
      metric: 'rounds committed',
      value: r.committed,
      unit: 'rounds',
      compare: `${r.aborted} aborted`,
    },
    {
      section: log,
      metric: 'bundle size',
      value: r.bundleBytes / 2 ** 20,
      unit: 'MiB',
      compare: '',
      detail: true,
    },
    {
      section: 'production',
      metric: 'federation time (start → last decision)',
      value: r.federationMs,
      unit: 'ms',
      compare: 'baseline',
    },
    {
      section: 'production',
      metric: 'one round (mean)',
      value: r.roundMs,
      unit: 'ms',
      compare: '',
      detail: true,
    },
    {
      section: `export (${AUDITOR}, live)`,
      metric: 'export time',
      value: r.exportMs,
      unit: 'ms',
      compare: '',
      floor: federationFloor(r.federationMs),
    },
    {
      section: 'bundle (offline)',
      metric: 'decode time',
      value: r.decodeMs,
      unit: 'ms',
      compare: '',
      detail: true,
    },
    ...auditRows('bundle (offline)', r.bundle, r.federationMs),
    ...auditRows(`live (${AUDITOR})`, r.live, r.federationMs),
  ];
  printTable('Audit of a federation log beside the time the federation took to produce it (same run)', rows);
  const path = writeResults('audit', rows, {
    shape,
    federationMs: r.federationMs,
    committed: r.committed,
    aborted: r.aborted,
    contributors: r.contributors,
    exportMs: r.exportMs,
    bundleBytes: r.bundleBytes,
    decodeMs: r.decodeMs,
    audits: {
      bundle: { ms: r.bundle.ms, entries: r.bundle.report.entries, checked: r.bundle.report.checked },
      live: { ms: r.live.ms, entries: r.live.report.entries, checked: r.live.report.checked },
    },
  });
  console.log(`\nwrote ${path}`);
}
