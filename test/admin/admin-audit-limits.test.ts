// The admin API's bounds on audit work and its request limits, over stand-in audit providers (no
// NATS; the real child-process jobs are in test/audit/audit-job.test.ts and, against a live
// coordinator, test/adversarial/admin-api.test.ts): one job per token and `maxJobs` in all, with
// Retry-After; the plain-mode contribution policy by scope; the time and size bounds; a client that
// leaves stops its job (real HTTP); audits of the live log shared, cached per log head and stopped
// when every caller left; authentication before any budget; refusals counted by reason and
// summarized in the log, not written a line each.
import { get } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type AdminApiOptions,
  type AdminDeps,
  type AdminRefusalReason,
  type AuditBundleRequest,
  type AuditJobOutcome,
  auditLimitsOf,
  buildAdminApi,
  type VerifyLogOptions,
} from '../../src/admin/index.ts';
import type { AuditReport } from '../../src/audit/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { auth, fixture, TOKEN, TOKENS } from './admin-fixture.ts';

let apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.map((a) => a.close()));
  apps = [];
});

/** What the stand-in providers and the metrics events saw. */
interface Seen {
  readonly bundles: AuditBundleRequest[];
  readonly verifies: VerifyLogOptions[];
  readonly refused: AdminRefusalReason[];
  readonly ended: string[];
  started: number;
}

/** A bundle body that yields `chunks` pieces of `size` bytes, then waits on `gate` before ending. */
function slowBody(signal: AbortSignal, chunks: number, size: number, gate?: Promise<void>): Readable {
  return Readable.from(
    (async function* () {
      for (let i = 0; i < chunks; i++) {
        if (signal.aborted) throw signal.reason;
        yield Buffer.alloc(size, i);
      }
      await gate;
      if (signal.aborted) throw signal.reason;
    })(),
  );
}

const REPORT: AuditReport = {
  federation: 'adm',
  source: { kind: 'live', stream: 'COHORT_ADM', member: 'coordinator', exportedUnixMs: null, sealedBy: null },
  registry: 'a'.repeat(64),
  genesis: 'b'.repeat(64),
  head: { hash: 'c'.repeat(64), height: 1, sequence: 3 },
  entries: 3,
  lastEntry: { sequence: 3, hash: 'd'.repeat(64) },
  historyThrough: 3,
  rounds: [],
  checked: {
    signatures: 3,
    links: 3,
    historyRules: 3,
    commitHashes: 1,
    aggregates: 1,
    registryChanges: 0,
    snapshots: 0,
    adminActions: 0,
    partials: 0,
    votes: 0,
    contributions: 0,
    recomputed: 0,
    privacyRecords: 0,
    robustAggregates: 0,
    culprits: 0,
    uncheckedKinds: 0,
  },
  problems: [],
  unchecked: [],
  verified: true,
};

/**
 * An API over the fixture whose audit providers are stand-ins: a bundle of `chunks` × 1 KiB held
 * open until `gate` resolves (none: at once), an audit that waits on `gate` too.
 */
function api(
  options: Partial<AdminApiOptions> & {
    mode?: 'he' | 'plain';
    gate?: Promise<void>;
    chunks?: number;
    logSequence?: () => number;
  } = {},
) {
  const f = fixture();
  const seen: Seen = { bundles: [], verifies: [], refused: [], ended: [], started: 0 };
  const deps: AdminDeps = {
    ...f.deps,
    ...(options.mode === undefined ? {} : { aggregation: { mode: options.mode, rule: null } }),
    coordinator: {
      ...f.deps.coordinator,
      stats: () => ({
        ...f.deps.coordinator.stats(),
        ...(options.logSequence === undefined ? {} : { logSequence: options.logSequence() }),
      }),
    },
    exportAuditBundle: async (request) => {
      seen.bundles.push(request);
      return {
        contentType: 'application/octet-stream',
        fileName: 'adm-audit.bundle',
        body: slowBody(request.signal, options.chunks ?? 4, 1024, options.gate),
      };
    },
    verifyLog: async (o) => {
      seen.verifies.push(o);
      await Promise.race([
        options.gate,
        new Promise((_, reject) => o.signal?.addEventListener('abort', () => reject(o.signal!.reason))),
      ]);
      return REPORT;
    },
    metrics: {
      contentType: 'text/plain',
      text: async () => '',
      events: {
        refused: (reason) => seen.refused.push(reason),
        auditJobStarted: () => {
          seen.started++;
        },
        auditJobEnded: (kind: string, outcome: AuditJobOutcome) => seen.ended.push(`${kind} ${outcome}`),
      },
    },
  };
  const app = buildAdminApi(deps, { tokens: TOKENS, ...options });
  apps.push(app);
  return { app, seen };
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

describe('audit jobs: one per token, a few in all', () => {
  it('a second job of the same token is 429 AUDIT_BUSY, past maxJobs 503 AUDIT_CAPACITY, with Retry-After', async () => {
    const g = gate();
    const { app, seen } = api({ gate: g.promise, audit: { maxJobs: 2 } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const first = await fetch(`${url}/v1/audit/bundle`, { headers: auth('auditor') });
    expect(first.status).toBe(200);
    const busy = await app.inject({ url: '/v1/audit/verify', headers: auth('auditor') });
    expect(busy.statusCode).toBe(429);
    expect(busy.json()).toMatchObject({ code: 'AUDIT_BUSY' });
    expect(Number(busy.headers['retry-after'])).toBeGreaterThan(0);
    const second = await fetch(`${url}/v1/audit/bundle`, { headers: auth('operator') });
    expect(second.status).toBe(200);
    const full = await app.inject({ url: '/v1/audit/bundle', headers: auth('admin') });
    expect(full.statusCode).toBe(503);
    expect(full.json()).toMatchObject({ code: 'AUDIT_CAPACITY' });
    expect(Number(full.headers['retry-after'])).toBeGreaterThan(0);
    expect(seen.refused).toEqual(['AUDIT_BUSY', 'AUDIT_CAPACITY']);
    g.open();
    expect((await first.arrayBuffer()).byteLength).toBe(4096);
    expect((await second.arrayBuffer()).byteLength).toBe(4096);
    await expect.poll(() => seen.ended).toEqual(['bundle completed', 'bundle completed']);
    // Slots are free again.
    expect((await app.inject({ url: '/v1/audit/bundle', headers: auth('auditor') })).statusCode).toBe(200);
  });

  it('refuses bounds out of range', () => {
    expect(errorCode(() => auditLimitsOf({ maxJobs: 0 }))).toBe('INVALID_ARGUMENT');
    expect(errorCode(() => auditLimitsOf({ plainContributions: 'root' as never }))).toBe('INVALID_ARGUMENT');
    expect(auditLimitsOf(undefined)).toMatchObject({ maxJobs: 2, plainContributions: 'admin' });
  });
});

describe('contributions in the bundle, by mode and scope', () => {
  it.each([
    // mode, opt-in scope, caller, asked → contributions given (or the refusal)
    ['plain', undefined, 'auditor', undefined, false],
    ['plain', undefined, 'operator', undefined, false],
    ['plain', undefined, 'admin', undefined, true],
    ['plain', undefined, 'auditor', 'true', 403],
    ['plain', undefined, 'admin', 'false', false],
    ['plain', 'auditor', 'auditor', undefined, true],
    ['plain', 'operator', 'operator', 'true', true],
    ['he', undefined, 'auditor', undefined, true],
    ['he', undefined, 'auditor', 'false', false],
  ] as const)(
    '%s mode, plainContributions %s: %s asking %s gets %s',
    async (mode, optIn, caller, asked, expected) => {
      const { app, seen } = api({
        mode,
        ...(optIn === undefined ? {} : { audit: { plainContributions: optIn } }),
      });
      const res = await app.inject({
        url: `/v1/audit/bundle${asked === undefined ? '' : `?contributions=${asked}`}`,
        headers: auth(caller),
      });
      if (expected === 403) {
        expect(res.statusCode).toBe(403);
        expect(res.json()).toMatchObject({ code: 'FORBIDDEN' });
        expect(res.json().message).toContain('admin.audit.plainContributions');
        expect(seen.bundles).toEqual([]);
        return;
      }
      expect(res.statusCode, res.body).toBe(200);
      expect(seen.bundles.map((b) => b.contributions)).toEqual([expected]);
    },
  );

  it('without a known mode the contributions are treated as plaintext', async () => {
    const { app, seen } = api();
    await app.inject({ url: '/v1/audit/bundle', headers: auth('auditor') });
    expect(seen.bundles.map((b) => b.contributions)).toEqual([false]);
  });
});

describe('bounds and cancellation', () => {
  it('a bundle past maxBundleBytes is cut at the bound and its job stopped', async () => {
    const { app, seen } = api({ chunks: 64, audit: { maxBundleBytes: 10 * 1024 } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    const body = await new Promise<{ bytes: number; complete: boolean }>((resolve) => {
      get(`http://127.0.0.1:${port}/v1/audit/bundle`, { headers: auth('admin') }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        const done = () => resolve({ bytes, complete: res.complete });
        res.on('end', done);
        res.on('aborted', done);
        res.on('error', done);
      });
    });
    expect(body.bytes).toBeLessThanOrEqual(10 * 1024);
    expect(body.complete).toBe(false);
    await expect.poll(() => seen.ended).toEqual(['bundle too_large']);
    expect(seen.bundles[0]!.signal.aborted).toBe(true);
  });

  it('a job past its time bound is stopped: 503 AUDIT_TIMEOUT before its first byte', async () => {
    const never = new Promise<void>(() => undefined);
    const { app, seen } = api({ gate: never, audit: { timeoutMs: 1 } });
    const res = await app.inject({ url: '/v1/audit/verify', headers: auth('auditor') });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'AUDIT_TIMEOUT' });
    expect(res.json().message).toContain('admin.audit.timeoutMs');
    expect(seen.verifies[0]!.signal?.aborted).toBe(true);
    expect(seen.ended).toEqual(['verify timeout']);
  });

  it('a client that leaves stops its bundle job and frees its slot', async () => {
    const g = gate();
    const { app, seen } = api({ gate: g.promise, chunks: 1 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as { port: number }).port;
    await new Promise<void>((resolve) => {
      const req = get(`http://127.0.0.1:${port}/v1/audit/bundle`, { headers: auth('auditor') }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
    });
    await expect.poll(() => seen.ended).toEqual(['bundle cancelled']);
    expect(seen.bundles[0]!.signal.aborted).toBe(true);
    // The token's slot is free: its next job runs.
    g.open();
    expect((await app.inject({ url: '/v1/audit/verify', headers: auth('auditor') })).statusCode).toBe(200);
  });
});

describe('audits of the live log', () => {
  it('are shared, answered from the last audit while the head stays, audited again when it moves', async () => {
    let head = 7;
    const g = gate();
    const { app, seen } = api({ gate: g.promise, logSequence: () => head });
    const pending = ['auditor', 'operator', 'admin'].map((s) =>
      app.inject({ url: '/v1/audit/verify', headers: auth(s as 'auditor') }),
    );
    await expect.poll(() => seen.verifies.length).toBe(1);
    g.open();
    for (const res of await Promise.all(pending)) expect(res.json()).toMatchObject({ verified: true });
    expect(seen.started).toBe(1);
    await app.inject({ url: '/v1/audit/verify', headers: auth('auditor') });
    expect(seen.verifies).toHaveLength(1);
    head = 8;
    await app.inject({ url: '/v1/audit/verify', headers: auth('auditor') });
    expect(seen.verifies).toHaveLength(2);
    expect(seen.ended).toEqual(['verify completed', 'verify completed']);
  });

  it('is stopped once every caller left', async () => {
    const never = new Promise<void>(() => undefined);
    const { app, seen } = api({ gate: never });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/v1/audit/verify`;
    const callers = [new AbortController(), new AbortController()];
    const answers = callers.map((c, i) =>
      fetch(url, { headers: auth(i === 0 ? 'auditor' : 'operator'), signal: c.signal }).catch(() => 'left'),
    );
    await expect.poll(() => seen.verifies.length).toBe(1);
    callers[0]!.abort();
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.verifies[0]!.signal?.aborted).toBe(false);
    callers[1]!.abort();
    await expect.poll(() => seen.verifies[0]!.signal?.aborted).toBe(true);
    expect(await Promise.all(answers)).toEqual(['left', 'left']);
    await expect.poll(() => seen.ended).toEqual(['verify cancelled']);
  });
});

describe('authentication before any budget', () => {
  it('requests without a valid token spend their address budget, never a token’s', async () => {
    const { app, seen } = api({ rateLimit: { perIp: 3, perToken: 2 } });
    const codes: string[] = [];
    for (const headers of [{}, { authorization: 'Bearer wrong' }, {}, {}, { authorization: 'Bearer x' }]) {
      codes.push((await app.inject({ url: '/v1/status', headers })).json().code);
    }
    expect(codes).toEqual([
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
      'RATE_LIMITED',
      'RATE_LIMITED',
    ]);
    const limited = await app.inject({ url: '/v1/health' });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // The same address with a token: its own budget, untouched by the above.
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      statuses.push((await app.inject({ url: '/v1/status', headers: auth('operator') })).statusCode);
    }
    expect(statuses).toEqual([200, 200, 429]);
    // Another token is not held back by the first, and a public route with a token spends the token's.
    expect((await app.inject({ url: '/v1/health', headers: auth('auditor') })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/status', headers: auth('auditor') })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/status', headers: auth('auditor') })).statusCode).toBe(429);
    expect(seen.refused).toEqual([
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
      'UNAUTHENTICATED',
      'RATE_LIMITED_ADDRESS',
      'RATE_LIMITED_ADDRESS',
      'RATE_LIMITED_ADDRESS',
      'RATE_LIMITED_TOKEN',
      'RATE_LIMITED_TOKEN',
    ]);
  });

  it('a token without the scope is 403 and counted; an unknown route 404 and counted', async () => {
    const { app, seen } = api();
    expect((await app.inject({ url: '/metrics', headers: auth('auditor') })).statusCode).toBe(403);
    expect((await app.inject({ url: '/v1/nothing', headers: auth('auditor') })).statusCode).toBe(404);
    expect((await app.inject({ url: '/v1/status?x=1', headers: auth('auditor') })).statusCode).toBe(400);
    expect(seen.refused).toEqual(['FORBIDDEN', 'NOT_FOUND', 'VALIDATION_FAILED']);
  });

  it('a flood of refusals writes a summary, not a line per request', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
    const { app } = api({ logger, rateLimit: { perIp: 50 } });
    for (let i = 0; i < 200; i++) {
      await app.inject({ url: '/v1/status', headers: { authorization: `Bearer ${TOKEN.auditor}x` } });
    }
    await app.inject({ url: '/v1/status', headers: auth('auditor') });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ reason: 'UNAUTHENTICATED', address: '127.0.0.1' });
    await app.close();
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1]!)).toMatchObject({
      refused: { UNAUTHENTICATED: 49, RATE_LIMITED_ADDRESS: 150 },
      addresses: 1,
    });
  });
});
