// Issue 22, break 8: the admin API's lowest scope against the coordinator. A live `plain`-mode
// federation (updates in the clear, a robust rule) whose coordinator serves the admin API in this
// process, over real HTTP: an unauthenticated flood from the address Prometheus scrapes from,
// parallel audit bundles from one token and from several, a client that leaves mid-bundle, a
// bundle past its size bound, parallel audits of the live log, and the auditor scope asking for
// the plaintext contributions. What the coordinator pays is measured in its own process: the bytes
// its own NATS connection (the one that holds the lease) reads while bundles and audits are served,
// rounds decided and lease renewals while bundles are held open, and its log lines; refusals are
// read back from its Prometheus exposition. No time is asserted.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminToken, buildAdminApi, coordinatorAdminDeps, hashToken } from '../../src/admin/index.ts';
import { type AuditBundle, type AuditReport, decodeAuditBundle } from '../../src/audit/index.ts';
import { coordinatorAdminServices } from '../../src/cli/commands/coordinator-admin.ts';
import type { CohortConfigInput } from '../../src/config/index.ts';
import type { CoordinatorHandle, RoundSummary } from '../../src/services/coordinator/index.ts';
import { federationSubjects } from '../../src/transport/index.ts';
import { Federation, waitFor } from '../helpers/federation.ts';
import { cohort } from '../helpers/run-cli.ts';
import { AttackLedger, counted, holds, refusedAs } from './attack-ledger.ts';

const F = 'admapi';
const OVERRIDES: Partial<CohortConfigInput> = {
  federation: { id: F, mode: 'plain', aggregation: { name: 'median' } },
  // Heartbeats once a second: what the coordinator's connection reads besides audits stays small.
  round: {
    heartbeatMs: 1000,
    missedHeartbeats: 10,
    deadlineMs: 15_000,
    voteTimeoutMs: 15_000,
    minContributors: 3,
  },
  learning: { model: 'logreg', trainLimit: 400, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

/** Plain tokens by id; the API holds their SHA-256 only. `prom` is Prometheus's. */
const SECRET: Record<string, string> = {
  root: 'tok-admapi-root',
  ops: 'tok-admapi-ops',
  prom: 'tok-admapi-prometheus',
  audit: 'tok-admapi-audit-1',
  'audit-2': 'tok-admapi-audit-2',
  'audit-3': 'tok-admapi-audit-3',
  'audit-4': 'tok-admapi-audit-4',
};
const SCOPES: Record<string, AdminToken['scopes']> = {
  root: ['admin'],
  ops: ['operator'],
  prom: ['operator'],
  audit: ['auditor'],
  'audit-2': ['auditor'],
  'audit-3': ['auditor'],
  'audit-4': ['auditor'],
};
const TOKENS: AdminToken[] = Object.keys(SECRET).map((id) => ({
  id,
  sha256: hashToken(SECRET[id]!),
  scopes: SCOPES[id]!,
}));
const bearer = (id: string) => ({ authorization: `Bearer ${SECRET[id]}` });

/** Requests per window from one address without a valid token (small, so a flood spends it). */
const PER_IP = 40;
/** Audit jobs at once across all tokens. */
const MAX_JOBS = 2;
/** The size bound of the second API instance, bytes. */
const SMALL_BUNDLE = 32 * 1024;

const ledger = new AttackLedger('admin-api', [
  'Issue 22 item',
  'Attack on the admin API (its lowest scope, or no token at all)',
  'Outcome',
]);

/** An answer whose body is left unread (the server sees a client that does not read). */
interface Opened {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly res: IncomingMessage;
}

function open(base: string, path: string, headers: Record<string, string>): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const req = get(`${base}${path}`, { headers }, (res) => {
      res.pause();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, res });
    });
    req.on('error', reject);
  });
}

/** Reads the rest of an answer: its bytes, and whether it ended cleanly (not cut off). */
function readAll(res: IncomingMessage): Promise<{ bytes: Buffer; complete: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve({ bytes: Buffer.concat(chunks), complete: res.complete }));
    res.on('error', () => resolve({ bytes: Buffer.concat(chunks), complete: false }));
    res.on('aborted', () => resolve({ bytes: Buffer.concat(chunks), complete: false }));
    res.resume();
  });
}

function decodes(bytes: Uint8Array): AuditBundle | string {
  try {
    return decodeAuditBundle(bytes);
  } catch (err) {
    return (err as Error).message;
  }
}

describe('the admin API against its lowest scope and no token (issue 22, break 8)', () => {
  let f: Federation;
  let coordinator: CoordinatorHandle;
  let app: FastifyInstance;
  let small: FastifyInstance;
  let url: string;
  let smallUrl: string;
  const decisions: RoundSummary[] = [];
  const logLines: string[] = [];
  /** Size of the admin token's bundle of the log after the first rounds (every contribution in it). */
  let bundleBytes = 0;

  /** Bytes the coordinator's own NATS connection (the lease holder's) has read so far. */
  const coordinatorRead = () => f.coord.transport.connection.stats().inBytes;

  let leaseKv: Awaited<ReturnType<Kvm['open']>> | undefined;
  /** The revision of the coordinator's lease entry: each renewal writes it anew. */
  async function leaseRevision(): Promise<number> {
    leaseKv ??= await new Kvm(f.coord.transport.connection).open(federationSubjects(F).leaseBucket);
    return (await leaseKv.get('coordinator'))?.revision ?? 0;
  }

  /** A counter of the coordinator's exposition (0 while absent), read with the operator token. */
  async function metric(name: string, labels: Record<string, string>): Promise<number> {
    const text = await (await fetch(`${url}/metrics`, { headers: bearer('ops') })).text();
    const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (want.every((w) => line.includes(w))) return Number(line.split(' ').at(-1));
    }
    return 0;
  }

  async function runRounds(n: number): Promise<RoundSummary[]> {
    const from = decisions.length;
    const run = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { ...bearer('ops'), 'content-type': 'application/json' },
      body: JSON.stringify({ rounds: n }),
    });
    expect(run.status, await run.clone().text()).toBe(201);
    await waitFor(`${n} more decisions`, () => decisions.length >= from + n, 120_000);
    await waitFor('the run completed', () => coordinator.runs().at(-1)?.state === 'completed', 20_000);
    return decisions.slice(from);
  }

  /** Audit child processes of this process still running (none once every job ended). */
  function auditProcesses(): number {
    let n = 0;
    for (const pid of readdirPids()) {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (ppid === process.pid && cmd.includes('audit-child')) n++;
      } catch {
        // gone meanwhile
      }
    }
    return n;
  }

  beforeAll(async () => {
    f = await Federation.create(F, { aggregators: 2, sites: 4, overrides: OVERRIDES });
    for (const a of f.dep.aggregators) await f.startAggregator(a);
    for (const s of f.dep.sites) await f.startAgent(s);
    let started = false;
    coordinator = f.startCoordinator({
      idle: true,
      switchWaitMs: 2000,
      onEvent: (e) => {
        if (e.type === 'started') started = true;
        if (e.type === 'decision') decisions.push(e.summary);
      },
    });
    await waitFor('the coordinator started', () => started, 30_000);
    const services = coordinatorAdminServices(f.dep.config, f.coord);
    services.attach(coordinator);
    const deps = coordinatorAdminDeps({
      handle: coordinator,
      member: f.coord,
      config: f.dep.config,
      metrics: services.metrics,
      exportAuditBundle: services.exportAuditBundle,
      verifyLog: services.verifyLog,
    });
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
    const rateLimit = { windowMs: 60_000, perIp: PER_IP, perToken: 10_000, sensitive: 5 };
    app = buildAdminApi(deps, { tokens: TOKENS, rateLimit, logger, audit: { maxJobs: MAX_JOBS } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    small = buildAdminApi(deps, {
      tokens: TOKENS,
      rateLimit,
      audit: { maxJobs: MAX_JOBS, maxBundleBytes: SMALL_BUNDLE },
    });
    await small.listen({ host: '127.0.0.1', port: 0 });
    smallUrl = `http://127.0.0.1:${(small.server.address() as { port: number }).port}`;
    await waitFor('every site live', () => coordinator.stats().liveSites.length === 4, 30_000);
    const first = await runRounds(5);
    expect(first.filter((d) => d.commit)).toHaveLength(5);
    const whole = await readAll((await open(url, '/v1/audit/bundle', bearer('root'))).res);
    const bundle = decodes(whole.bytes);
    expect(typeof bundle, String(bundle)).toBe('object');
    expect((bundle as AuditBundle).contributions!.size).toBeGreaterThanOrEqual(12);
    bundleBytes = whole.bytes.length;
  }, 300_000);

  afterAll(async () => {
    await small?.close();
    await app?.close();
    await f?.stop();
  });

  it('an unauthenticated flood does not lock out the tokens, and is not logged line by line', async () => {
    const prometheus = await fetch(`${url}/metrics`, { headers: bearer('prom') });
    expect(prometheus.status).toBe(200);
    const before = {
      unauthenticated: await metric('cohort_admin_requests_refused_total', { reason: 'UNAUTHENTICATED' }),
      limited: await metric('cohort_admin_requests_refused_total', { reason: 'RATE_LIMITED_ADDRESS' }),
      lines: logLines.length,
    };
    const codes: string[] = [];
    for (let i = 0; i < 3 * PER_IP; i++) {
      const headers: Record<string, string> = i % 2 === 0 ? {} : { authorization: 'Bearer not-a-token' };
      const res = await fetch(`${url}${i % 3 === 0 ? '/metrics' : '/v1/status'}`, { headers });
      codes.push(((await res.json()) as { code: string }).code);
    }
    const lines = logLines.length - before.lines;
    const scrape = await fetch(`${url}/metrics`, { headers: bearer('prom') });
    const status = await fetch(`${url}/v1/status`, { headers: bearer('audit') });
    const after = {
      unauthenticated: await metric('cohort_admin_requests_refused_total', { reason: 'UNAUTHENTICATED' }),
      limited: await metric('cohort_admin_requests_refused_total', { reason: 'RATE_LIMITED_ADDRESS' }),
    };
    ledger.record(
      8,
      `${3 * PER_IP} requests without a token or with a wrong one, from the address Prometheus scrapes from (\`perIp\` ${PER_IP})`,
      [
        refusedAs('UNAUTHENTICATED', codes[0]),
        counted(
          'cohort_admin_requests_refused_total{reason="UNAUTHENTICATED"}',
          before.unauthenticated,
          after.unauthenticated,
        ),
        refusedAs('RATE_LIMITED', codes.at(-1), 'the address limit on unauthenticated requests'),
        counted(
          'cohort_admin_requests_refused_total{reason="RATE_LIMITED_ADDRESS"}',
          before.limited,
          after.limited,
        ),
        holds(
          "Prometheus's token still scrapes and an auditor's still reads (each token has its own budget)",
          scrape.status === 200 && status.status === 200,
        ),
        holds('the flood wrote at most 2 log lines (refusals are aggregated)', lines <= 2),
      ],
    );
  });

  it('parallel bundles: one job per token, a small global limit, none in the coordinator process', async () => {
    const busy = await metric('cohort_admin_requests_refused_total', { reason: 'AUDIT_BUSY' });
    const full = await metric('cohort_admin_requests_refused_total', { reason: 'AUDIT_CAPACITY' });
    const read = coordinatorRead();
    const same = await Promise.all(
      Array.from({ length: 8 }, () => open(url, '/v1/audit/bundle', bearer('audit'))),
    );
    const others = await Promise.all(
      ['audit-2', 'audit-3', 'audit-4'].map((id) => open(url, '/v1/audit/bundle', bearer(id))),
    );
    const served = [...same, ...others].filter((o) => o.status === 200);
    const refusedSame = same.filter((o) => o.status !== 200);
    const refusedOthers = others.filter((o) => o.status !== 200);
    const bodies = await Promise.all([...same, ...others].map((o) => readAll(o.res)));
    const codeOf = (o: Opened) =>
      (JSON.parse(bodies[[...same, ...others].indexOf(o)]!.bytes.toString()) as { code: string }).code;
    const bundles = [...same, ...others]
      .map((o, i) => (o.status === 200 ? decodes(bodies[i]!.bytes) : null))
      .filter((b) => b !== null);
    const readByCoordinator = coordinatorRead() - read;
    ledger.record(
      8,
      `8 parallel \`GET /v1/audit/bundle\` with one auditor token, then one each with 3 other auditor tokens (global limit ${MAX_JOBS})`,
      [
        holds(
          'one bundle per token at a time: 7 of the 8 refused',
          same.filter((o) => o.status === 200).length === 1 && refusedSame.length === 7,
        ),
        refusedAs('AUDIT_BUSY', refusedSame.map(codeOf).join(' ')),
        counted(
          'cohort_admin_requests_refused_total{reason="AUDIT_BUSY"}',
          busy,
          await metric('cohort_admin_requests_refused_total', { reason: 'AUDIT_BUSY' }),
          7,
        ),
        holds(
          `past ${MAX_JOBS} jobs at once the others are refused (503), each refusal with Retry-After`,
          served.length === MAX_JOBS &&
            refusedOthers.length === 2 &&
            [...refusedSame, ...refusedOthers].every((o) => Number(o.headers['retry-after']) > 0),
        ),
        refusedAs('AUDIT_CAPACITY', refusedOthers.map(codeOf).join(' ')),
        counted(
          'cohort_admin_requests_refused_total{reason="AUDIT_CAPACITY"}',
          full,
          await metric('cohort_admin_requests_refused_total', { reason: 'AUDIT_CAPACITY' }),
          2,
        ),
        holds(
          'each bundle served decodes whole',
          bundles.length === MAX_JOBS && bundles.every((b) => typeof b === 'object'),
        ),
        holds(
          "the coordinator's own NATS connection read less than one bundle meanwhile: the export runs in a child process with its own connection",
          readByCoordinator < bundleBytes,
        ),
      ],
    );
  }, 120_000);

  it('rounds are decided and the lease renewed while bundles are held open by clients that do not read', async () => {
    const held = await Promise.all(
      ['audit', 'audit-2'].map((id) => open(url, '/v1/audit/bundle', bearer(id))),
    );
    expect(held.map((h) => h.status)).toEqual([200, 200]);
    const revision = await leaseRevision();
    const during = await runRounds(2);
    // The coordinator renews its lease every third of `history.leaseMs`: wait for one (bounded).
    const renewed = await waitFor('a lease renewal', async () => (await leaseRevision()) > revision, 30_000)
      .then(() => true)
      .catch(() => false);
    const bodies = await Promise.all(held.map((h) => readAll(h.res)));
    ledger.record(
      8,
      'two bundles held open by clients that stop reading, while the federation runs 2 rounds',
      [
        holds(
          'both rounds commit and the lease is renewed meanwhile (the coordinator never waits on an audit)',
          during.every((d) => d.commit) && renewed,
        ),
        holds(
          'each bundle then arrives whole (streamed as produced, no bundle in memory)',
          bodies.every((b) => b.complete && typeof decodes(b.bytes) === 'object'),
        ),
      ],
    );
  }, 180_000);

  it('a client that leaves mid-bundle cancels the job', async () => {
    const before = await metric('cohort_admin_audit_jobs_total', { kind: 'bundle', outcome: 'cancelled' });
    const opened = await open(url, '/v1/audit/bundle', bearer('root'));
    expect(opened.status).toBe(200);
    opened.res.destroy();
    let after = before;
    await waitFor(
      'the job counted as cancelled',
      async () => {
        after = await metric('cohort_admin_audit_jobs_total', { kind: 'bundle', outcome: 'cancelled' });
        return after > before;
      },
      20_000,
    ).catch(() => undefined);
    await waitFor('no audit process left', () => auditProcesses() === 0, 20_000).catch(() => undefined);
    ledger.record(8, 'request a bundle and disconnect after its first bytes', [
      counted('cohort_admin_audit_jobs_total{kind="bundle",outcome="cancelled"}', before, after),
      holds('its process is gone', auditProcesses() === 0),
    ]);
  }, 60_000);

  it('a bundle past the size bound is cut off and counted', async () => {
    const before = await metric('cohort_admin_audit_jobs_total', { kind: 'bundle', outcome: 'too_large' });
    const opened = await open(smallUrl, '/v1/audit/bundle', bearer('root'));
    const body = await readAll(opened.res);
    let after = before;
    await waitFor(
      'the job counted',
      async () => {
        after = await metric('cohort_admin_audit_jobs_total', { kind: 'bundle', outcome: 'too_large' });
        return after > before;
      },
      20_000,
    ).catch(() => undefined);
    ledger.record(8, `a bundle larger than \`admin.audit.maxBundleBytes\` (${SMALL_BUNDLE} bytes)`, [
      holds(
        `the answer stops at the bound and is not a bundle (no trailer): ${SMALL_BUNDLE} bytes at most`,
        body.bytes.length <= SMALL_BUNDLE && !body.complete && typeof decodes(body.bytes) === 'string',
      ),
      counted('cohort_admin_audit_jobs_total{kind="bundle",outcome="too_large"}', before, after),
    ]);
  }, 60_000);

  it('parallel audits of the live log run once, outside the coordinator, and are cached per log head', async () => {
    const before = await metric('cohort_admin_audit_jobs_total', { kind: 'verify', outcome: 'completed' });
    const read = coordinatorRead();
    const answers = await Promise.all(
      ['ops', 'audit', 'audit-2', 'audit-3'].map((id) =>
        fetch(`${url}/v1/audit/verify`, { headers: bearer(id) }).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as { verified?: boolean; code?: string },
        })),
      ),
    );
    const readByCoordinator = coordinatorRead() - read;
    const once = await metric('cohort_admin_audit_jobs_total', { kind: 'verify', outcome: 'completed' });
    const again = await fetch(`${url}/v1/audit/verify`, { headers: bearer('audit') });
    const cached = await metric('cohort_admin_audit_jobs_total', { kind: 'verify', outcome: 'completed' });
    ledger.record(8, '`GET /v1/audit/verify` from 4 tokens at once, then again at the same log head', [
      holds(
        'every caller gets the verified report of one audit',
        answers.every((a) => a.status === 200 && a.body.verified === true) && once - before === 1,
      ),
      holds(
        "the coordinator's own NATS connection read less than one bundle meanwhile: the audit re-adds in a child process",
        readByCoordinator < bundleBytes,
      ),
      holds(
        'the second call at the same log head is answered from the cache (no second job)',
        again.status === 200 && cached === once,
      ),
    ]);
  }, 180_000);

  it('in plain mode the auditor scope exports no contribution (they are plaintext updates)', async () => {
    const dir = f.dep.dir;
    const asAuditor = await readAll((await open(url, '/v1/audit/bundle', bearer('audit'))).res);
    const auditorBundle = decodes(asAuditor.bytes) as AuditBundle;
    const asked = await fetch(`${url}/v1/audit/bundle?contributions=true`, { headers: bearer('audit') });
    const askedCode = ((await asked.json()) as { code: string }).code;
    const asAdmin = await readAll((await open(url, '/v1/audit/bundle', bearer('root'))).res);
    const adminBundle = decodes(asAdmin.bytes) as AuditBundle;
    const verify = async (bytes: Buffer, name: string, ...flags: string[]) => {
      const path = join(dir, name);
      writeFileSync(path, bytes);
      const r = await cohort(
        'audit',
        'verify',
        '--bundle',
        path,
        '--config',
        f.dep.configPath,
        '--json',
        ...flags,
      );
      return { ...r, report: r.stdout === '' ? null : (JSON.parse(r.stdout) as AuditReport) };
    };
    const admin = await verify(asAdmin.bytes, 'admin.bundle');
    const skipped = await verify(asAuditor.bytes, 'auditor.bundle', '--skip-contributions');
    const incomplete = await verify(asAuditor.bytes, 'auditor.bundle');
    ledger.record(8, 'an auditor token asks for the audit bundle of a `plain`-mode federation', [
      holds(
        "the auditor's bundle holds no contribution and its meta says they were skipped",
        auditorBundle.meta?.contributions === 'skipped' && (auditorBundle.contributions?.size ?? 0) === 0,
      ),
      refusedAs('FORBIDDEN', askedCode),
      holds(
        "an admin token's bundle holds every contribution and verifies (exit 0)",
        (adminBundle.contributions?.size ?? 0) > 0 && admin.status === 0 && admin.report?.verified === true,
      ),
      holds(
        "the auditor's bundle verifies with `--skip-contributions` (exit 0); without it the audit is incomplete, `CONTRIBUTIONS_UNAVAILABLE` (exit 2)",
        skipped.status === 0 &&
          incomplete.status === 2 &&
          incomplete.stderr.includes('CONTRIBUTIONS_UNAVAILABLE'),
      ),
    ]);
  }, 180_000);

  it('the attack table in docs/security.md is the one observed', () => {
    ledger.verify();
  });
});

function readdirPids(): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}
