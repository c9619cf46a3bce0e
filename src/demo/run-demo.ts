import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { RobustRule } from '../../federation/index.ts';
import type { AuditReport } from '../audit/index.ts';
import type { TextSink } from '../log/index.ts';
import { createLocalDeployment } from '../services/deployment.ts';
import { findNatsServer } from '../transport/index.ts';
import { mnistDataContract, writeDemoSiteData } from './demo-site-data.ts';

const BIN = fileURLToPath(new URL('../../bin/cohort.js', import.meta.url));

/** Options of the demo federation. */
export interface DemoOptions {
  readonly rounds: number;
  readonly sites: number;
  readonly aggregators: number;
  /** Keep the working folder (keys, logs, models) instead of deleting it. */
  readonly keep: boolean;
  /** Training rows shared by the sites (default: all 60,000). */
  readonly trainLimit?: number;
  /**
   * Differential privacy (docs/privacy.md): the ε budget, calibrated for `rounds` rounds, with
   * every update clipped to `clipNorm` (default 0.05).
   */
  readonly privacy?: { readonly epsilon: number; readonly clipNorm?: number };
  /** `he` (default) or `plain` (signed plaintext updates the coordinator reads). */
  readonly mode?: 'he' | 'plain';
  /**
   * `he` mode: `threshold` (default: no site holds the key, t sites decrypt together) or `shared`
   * (one CKKS key wrapped to every site), `crypto.keys`.
   */
  readonly keys?: 'shared' | 'threshold';
  /** `plain` mode: the robust rule (`federation.aggregation`); Multi-Krum runs with every site in each round. */
  readonly aggregation?: RobustRule;
}

/**
 * What an auditor does after the run: `cohort audit verify` as the read-only auditor user, one
 * summary line (or the problems); its exit status is the demo's.
 */
async function auditDemo(
  configPath: string,
  auditor: string | undefined,
  say: (s: string) => void,
): Promise<number> {
  if (auditor === undefined) return 0;
  const child = spawn(
    process.execPath,
    [BIN, 'audit', 'verify', '--config', configPath, '--member', auditor, '--json'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const chunks: Buffer[] = [];
  const errors: Buffer[] = [];
  child.stdout?.on('data', (b: Buffer) => chunks.push(b));
  child.stderr?.on('data', (b: Buffer) => errors.push(b));
  const code = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
  const text = Buffer.concat(chunks).toString('utf8');
  if (code !== 0 || text === '') {
    say(`audit verify (${auditor}) exited with ${code}: ${Buffer.concat(errors).toString('utf8').trim()}`);
    for (const p of text === '' ? [] : (JSON.parse(text) as AuditReport).problems)
      say(`  entry ${p.sequence} ${p.code} ${p.message}`);
    return code === 0 ? 1 : code;
  }
  const r = JSON.parse(text) as AuditReport;
  say(
    `audit (${auditor}, read-only NATS user): verified ${r.entries} log entries — signatures, hash chain, ${r.checked.commitHashes} commits, ${r.checked.votes} votes, ${r.checked.recomputed} aggregates re-added from ${r.checked.contributions} stored updates, byte-identical${r.checked.privacyRecords > 0 ? `, ${r.checked.privacyRecords} privacy records` : ''}${r.checked.robustAggregates > 0 ? `, ${r.checked.robustAggregates} robust aggregates recomputed` : ''}; ${r.problems.length} problems`,
  );
  return 0;
}

/** Share of each demo site's rows held out for validation. */
const DEMO_VALIDATION_FRACTION = 0.1;

/**
 * The demo federation: nats-server with per-member users, a key ceremony, then a coordinator,
 * aggregators and site agents as separate processes that talk only through NATS, training the
 * MNIST 2NN in `he` mode. The federation declares MNIST's data contract (`data`), and each site
 * gets its own files (`<dir>/site-data/`, split IID like `cohort data split`) and its own site
 * configuration (`<dir>/<site>.site.yaml`, with a validation split), so every agent starts with
 * `--site-config` and checks its data against the contract as a real site does. Streams the
 * coordinator's per-round lines; other processes log JSON to files in the working folder.
 */
export async function runDemo(options: DemoOptions, out: TextSink, err: TextSink): Promise<number> {
  findNatsServer(); // a clear error now if nats-server is not installed
  const mode = options.mode ?? 'he';
  const keys = mode === 'he' ? (options.keys ?? 'threshold') : 'shared';
  const dir = mkdtempSync(join(tmpdir(), 'cohort-demo-'));
  const say = (s: string) => out.write(`${s}\n`);
  say(
    `Cohort demo: ${options.sites} sites, ${options.aggregators} aggregators, ${options.rounds} rounds, MNIST 2NN, ${mode} mode${mode === 'he' ? ` (${keys} keys)` : ''}` +
      (options.aggregation === undefined ? '' : `, ${options.aggregation.name}`) +
      (options.privacy === undefined ? '' : `, differential privacy ε ≤ ${options.privacy.epsilon}`),
  );
  say(`working folder: ${dir}`);
  const t0 = performance.now();
  const deployment = await createLocalDeployment({
    dir,
    federation: 'demo',
    sites: options.sites,
    aggregators: options.aggregators,
    // Everything not named here is the schema's default: the 2NN on MNIST, E = 1, B = 10,
    // lr 0.1, FedAvg, the CPU engine, 8-bit updates with 32 contributors of headroom.
    overrides: {
      federation: {
        id: 'demo',
        mode,
        ...(options.aggregation === undefined ? {} : { aggregation: { ...options.aggregation } }),
      },
      round: {
        count: options.rounds,
        // Multi-Krum needs more than 2f + 2 updates in every round that commits: all the sites.
        ...(options.aggregation?.name === 'multi-krum' ? { minContributors: options.sites } : {}),
        deadlineMs: 90_000,
        voteTimeoutMs: 60_000,
        heartbeatMs: 500,
        missedHeartbeats: 10,
      },
      learning: { trainLimit: options.trainLimit },
      codec: { clip: 0.02 },
      crypto: { keys },
      data: mnistDataContract(),
      ...(options.privacy === undefined
        ? {}
        : {
            privacy: {
              epsilon: options.privacy.epsilon,
              clipNorm: options.privacy.clipNorm ?? 0.05,
              plannedRounds: options.rounds,
            },
          }),
    },
  });
  const siteConfigs = writeDemoSiteData({
    dir,
    sites: deployment.sites,
    seed: deployment.config.learning.initSeed,
    validationFraction: DEMO_VALIDATION_FRACTION,
    ...(options.trainLimit === undefined ? {} : { trainLimit: options.trainLimit }),
  });
  const epoch = deployment.threshold;
  say(
    epoch === undefined
      ? `key ceremony done (Falcon-512 signing keys, CKKS key${mode === 'plain' ? ' (unused in plain mode)' : ''} and federation data key wrapped per site with ML-KEM-768); nats-server ${deployment.nats.url} with per-member permissions (${((performance.now() - t0) / 1000).toFixed(1)} s)`
      : `key ceremony done (Falcon-512 signing keys; threshold CKKS: each site drew its own secret and dealt Shamir shares of it sealed to the others' ML-KEM-768 keys, any ${epoch.threshold} of ${epoch.publicShares.length} sites decrypt, no whole secret key written anywhere; federation data key wrapped per site); nats-server ${deployment.nats.url} with per-member permissions (${((performance.now() - t0) / 1000).toFixed(1)} s)`,
  );
  if (epoch !== undefined) {
    say(`  key epoch ${epoch.epochId.slice(0, 16)}, each site's public share:`);
    for (const p of epoch.publicShares) say(`  ${p.site} (point ${p.point}) public share ${p.fingerprint}`);
  }
  const children: ChildProcess[] = [];
  const logs: WriteStream[] = [];
  // Each member's JSON log lines (stdout) and its human lines (stderr) go to <dir>/<member>.log;
  // the coordinator's human lines (one per round) are also the demo's output.
  const spawnMember = (args: string[], name: string, pipe: boolean) => {
    const child = spawn(process.execPath, [BIN, ...args, '--config', deployment.configPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env },
    });
    const log = createWriteStream(join(dir, `${name}.log`));
    if (pipe) {
      // Whole lines from both streams, so a human line never lands inside a JSON one.
      createInterface({ input: child.stdout! }).on('line', (line) => log.write(`${line}\n`));
    } else {
      child.stdout?.pipe(log, { end: false });
      child.stderr?.pipe(log, { end: false });
    }
    children.push(child);
    logs.push(log);
    return { child, log };
  };
  try {
    for (const a of deployment.aggregators) spawnMember(['aggregator', '--member', a], a, false);
    for (const [i, s] of deployment.sites.entries()) {
      const own = ['--site-config', siteConfigs.get(s)!];
      spawnMember(['agent', '--member', s, ...own, ...(i === 0 ? ['--evaluate'] : [])], s, false);
    }
    say(
      `started ${deployment.aggregators.length} aggregators and ${deployment.sites.length} agents, each on its own MNIST files checked against the data contract (logs in ${dir})`,
    );
    const { child: coordinator, log: coordinatorLog } = spawnMember(
      ['coordinator', '--rounds', String(options.rounds)],
      'coordinator',
      true,
    );
    const lines = createInterface({ input: coordinator.stderr! });
    lines.on('line', (line) => {
      coordinatorLog.write(`${line}\n`);
      // Node's own warnings are the log's, not the demo's output.
      if (!line.startsWith('(node:') && !line.startsWith('(Use `node')) say(line);
    });
    const code = await new Promise<number>((resolve) => coordinator.on('exit', (c) => resolve(c ?? 1)));
    say(`coordinator exited with ${code} after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (code !== 0) return code;
    return await auditDemo(deployment.configPath, deployment.config.members?.auditors[0]?.id, say);
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    await Promise.all(logs.map((l) => new Promise((r) => l.end(r))));
    await deployment.stop();
    if (!options.keep) rmSync(dir, { recursive: true, force: true });
    else err.write(`kept ${dir}\n`);
  }
}
