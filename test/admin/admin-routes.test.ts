// Every route through inject(): its 2xx with the least scope it needs, a 400 naming the bad
// field, 401 without a token and with an unknown one, 403 with a narrower scope (where there is
// one: every token holds at least auditor), and 429 once its rate limit is spent.
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { generateKemKeyPair } from '../../crypto/kem/index.ts';
import { generateSigningKeyPair, toPublicSigningKey } from '../../crypto/signature/index.ts';
import { type AdminScope, buildAdminApi } from '../../src/admin/index.ts';
import { encodeRegistryChangeRecord, sealRegistryChange } from '../../src/registry/index.ts';
import { auth, FED, type Fixture, fixture, refusal, TOKENS } from './admin-fixture.ts';

const officer = generateSigningKeyPair('falcon-512');
const memberKey = generateSigningKeyPair('falcon-512');
const memberKem = generateKemKeyPair();

/** base64 of an officer-signed change of `kind` for `member` (the API only passes it on). */
function change(kind: 'enroll' | 'rotate' | 'revoke', member: string, role = 'site'): string {
  const record = sealRegistryChange(
    {
      federation: FED,
      kind,
      member,
      role: role as 'site',
      signingKey: kind === 'revoke' ? undefined : toPublicSigningKey(memberKey),
      kemKey: kind === 'enroll' ? memberKem.publicKey : undefined,
      nkey: undefined,
      fromRound: 7,
      issuedUnixMs: Date.now(),
      reason: 'test',
    },
    officer,
  );
  return Buffer.from(encodeRegistryChangeRecord(record)).toString('base64');
}

interface Case {
  readonly name: string;
  readonly scope: AdminScope | 'public';
  /** The request that succeeds. */
  readonly ok: InjectOptions & { method: 'GET' | 'POST'; url: string };
  readonly status: number;
  /** A request the schema refuses, and the field it must name. */
  readonly bad: InjectOptions & { method: 'GET' | 'POST'; url: string };
  readonly field: string;
  /** What else the success must show. */
  readonly check?: (body: unknown, f: Fixture) => void;
  /** The admin action it logs (mutating routes). */
  readonly action?: string;
}

const CASES: Case[] = [
  {
    name: 'health',
    scope: 'public',
    ok: { method: 'GET', url: '/v1/health' },
    status: 200,
    bad: { method: 'GET', url: '/v1/health?verbose=1' },
    field: 'querystring.verbose',
  },
  {
    name: 'readiness',
    scope: 'public',
    ok: { method: 'GET', url: '/v1/ready' },
    status: 200,
    bad: { method: 'GET', url: '/v1/ready?x=1' },
    field: 'querystring.x',
  },
  {
    name: 'openapi',
    scope: 'public',
    ok: { method: 'GET', url: '/v1/openapi.json' },
    status: 200,
    bad: { method: 'GET', url: '/v1/openapi.json?format=yaml' },
    field: 'querystring.format',
  },
  {
    name: 'metrics',
    scope: 'operator',
    ok: { method: 'GET', url: '/metrics' },
    status: 200,
    bad: { method: 'GET', url: '/metrics?name[]=x' },
    field: 'querystring.name[]',
  },
  {
    name: 'status',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/status' },
    status: 200,
    bad: { method: 'GET', url: '/v1/status?all=1' },
    field: 'querystring.all',
    check: (b) => {
      const s = b as { phase: string; round: number; lastRounds: { round: number; status: string }[] };
      expect(s.phase).toBe('collecting');
      expect(s.lastRounds.map((r) => [r.round, r.status])).toEqual([
        [6, 'open'],
        [5, 'commit'],
        [4, 'commit'],
        [3, 'abort'],
        [2, 'commit'],
      ]);
    },
  },
  {
    name: 'sites list',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/sites' },
    status: 200,
    bad: { method: 'GET', url: '/v1/sites?live=true' },
    field: 'querystring.live',
    check: (b) => {
      const sites = b as { id: string; live: boolean; lastContribution: { round: number } | null }[];
      // site-3 last contributed in round 1 (it was missing from round 2 on).
      expect(sites.map((s) => [s.id, s.live, s.lastContribution?.round ?? null])).toEqual([
        ['site-1', true, 5],
        ['site-2', true, 5],
        ['site-3', false, 1],
        ['agg-1', true, null],
      ]);
    },
  },
  {
    name: 'enroll',
    scope: 'admin',
    ok: { method: 'POST', url: '/v1/sites', payload: { change: change('enroll', 'site-9') } },
    status: 202,
    bad: { method: 'POST', url: '/v1/sites', payload: { change: 'not base64!' } },
    field: 'body.change',
    action: 'registry.enroll',
  },
  {
    name: 'revoke',
    scope: 'admin',
    ok: { method: 'POST', url: '/v1/sites/site-3/revoke', payload: { change: change('revoke', 'site-3') } },
    status: 202,
    bad: {
      method: 'POST',
      url: '/v1/sites/site-3/revoke',
      payload: { change: change('revoke', 'site-3'), force: true },
    },
    field: 'body.force',
    action: 'registry.revoke',
  },
  {
    name: 'key rotation',
    scope: 'admin',
    ok: { method: 'POST', url: '/v1/keys/rotate', payload: { change: change('rotate', 'site-1') } },
    status: 202,
    bad: { method: 'POST', url: '/v1/keys/rotate', payload: {} },
    field: 'body.change',
    action: 'registry.rotate',
  },
  {
    name: 'runs list',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/runs' },
    status: 200,
    bad: { method: 'GET', url: '/v1/runs?state=running' },
    field: 'querystring.state',
  },
  {
    name: 'run start',
    scope: 'operator',
    ok: { method: 'POST', url: '/v1/runs', payload: { rounds: 3, label: 'warm-up' } },
    status: 201,
    bad: { method: 'POST', url: '/v1/runs', payload: { rounds: 0 } },
    field: 'body.rounds',
    action: 'runs.start',
    check: (b, f) => {
      expect(b).toMatchObject({
        id: 'run-1',
        rounds: 3,
        label: 'warm-up',
        state: 'running',
        startedBy: 'ops',
      });
      expect(f.calls).toEqual(['startRun 3']);
    },
  },
  {
    name: 'rounds list',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/rounds?limit=2' },
    status: 200,
    bad: { method: 'GET', url: '/v1/rounds?limit=0' },
    field: 'querystring.limit',
    check: (b) => expect((b as { round: number }[]).map((r) => r.round)).toEqual([6, 5]),
  },
  {
    name: 'round show',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/rounds/2' },
    status: 200,
    bad: { method: 'GET', url: '/v1/rounds/two' },
    field: 'params.round',
    check: (b) =>
      expect(b).toMatchObject({
        round: 2,
        status: 'commit',
        contributors: ['site-1', 'site-2'],
        missing: ['site-3'],
        // Entries are 1 s apart in the fixture: RoundOpen at entry 3, its decision at entry 4.
        durationMs: 1000,
        // One level (no RoundOpen parents): the aggregator sends to the coordinator.
        assignments: [{ site: 'site-1', aggregator: 'agg-1', examples: 600, aggregatorParent: '' }],
      }),
  },
  {
    name: 'round abort',
    scope: 'operator',
    ok: { method: 'POST', url: '/v1/rounds/6/abort', payload: { reason: 'bad data at site-2' } },
    status: 202,
    bad: { method: 'POST', url: '/v1/rounds/6/abort', payload: { reason: 'x'.repeat(300) } },
    field: 'body.reason',
    action: 'rounds.abort',
    check: (_b, f) =>
      expect(f.calls).toEqual(['abortRound 6 aborted by ops (admin API): bad data at site-2']),
  },
  {
    name: 'versions log',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/versions?all=true' },
    status: 200,
    bad: { method: 'GET', url: '/v1/versions?all=yes' },
    field: 'querystring.all',
    check: (b) =>
      expect((b as { kind: string }[]).map((j) => j.kind)).toEqual([
        'round',
        'rollback',
        'abort',
        'round',
        'round',
        'genesis',
      ]),
  },
  {
    name: 'version show',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/versions/@2' },
    status: 200,
    bad: { method: 'GET', url: '/v1/versions/HEAD~x' },
    field: 'params.ref',
    check: (b, f) =>
      expect(b).toMatchObject({
        height: 2,
        nextClip: 0.25,
        exclusions: [{ site: 'site-3', excluded: true }],
        snapshots: [{ site: 'site-1' }],
        hash: Buffer.from(f.script.commits[2]!.hash).toString('hex'),
      }),
  },
  {
    name: 'version export',
    scope: 'operator',
    ok: { method: 'GET', url: '/v1/versions/HEAD~1/export' },
    status: 200,
    bad: { method: 'GET', url: '/v1/versions/zz/export' },
    field: 'params.ref',
  },
  {
    name: 'rollback',
    scope: 'admin',
    ok: { method: 'POST', url: '/v1/versions/rollback', payload: { target: '@1', reason: 'regression' } },
    status: 202,
    bad: { method: 'POST', url: '/v1/versions/rollback', payload: { reason: 'no target' } },
    field: 'body.target',
    action: 'versions.rollback',
    check: (b, f) => {
      expect(b).toMatchObject({ queued: true, height: 1 });
      expect(f.calls).toEqual([
        `rollback ${Buffer.from(f.script.commits[1]!.hash).toString('hex').slice(0, 12)}`,
      ]);
    },
  },
  {
    name: 'audit bundle',
    scope: 'auditor',
    ok: { method: 'GET', url: '/v1/audit/bundle' },
    status: 200,
    bad: { method: 'GET', url: '/v1/audit/bundle?since=3' },
    field: 'querystring.since',
  },
];

const NARROWER: Partial<Record<AdminScope, AdminScope>> = { admin: 'operator', operator: 'auditor' };

let apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.map((a) => a.close()));
  apps = [];
});

function api(f: Fixture, rateLimit?: { perToken?: number; sensitive?: number; perIp?: number }) {
  const app = buildAdminApi(f.deps, { tokens: TOKENS, ...(rateLimit === undefined ? {} : { rateLimit }) });
  apps.push(app);
  return app;
}

describe.each(CASES)('$name ($scope)', (c) => {
  const token = c.scope === 'public' ? {} : auth(c.scope);

  it(`answers ${c.status}`, async () => {
    const f = fixture();
    const res = await api(f).inject({ ...c.ok, headers: token });
    expect(res.statusCode, res.body).toBe(c.status);
    if (res.headers['content-type']?.toString().startsWith('application/json')) c.check?.(res.json(), f);
    else c.check?.(res.body, f);
    if (c.action !== undefined) {
      expect(f.actions.map((a) => [a.action, a.caller, a.scope])).toEqual([
        [c.action, TOKENS.find((t) => t.scopes[0] === c.scope)!.id, c.scope],
      ]);
    } else {
      expect(f.actions).toEqual([]);
    }
  });

  it('answers 400 naming the field, and does nothing', async () => {
    const f = fixture();
    const res = await api(f).inject({ ...c.bad, headers: token });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ statusCode: 400, code: 'VALIDATION_FAILED', field: c.field });
    expect(res.json().message).toContain(c.field);
    expect(f.actions).toEqual([]);
    expect(f.calls).toEqual([]);
  });

  it.skipIf(c.scope === 'public')('answers 401 without a token and with an unknown one', async () => {
    const f = fixture();
    const app = api(f);
    for (const headers of [
      {},
      { authorization: 'Bearer not-a-token' },
      { authorization: 'Basic cm9vdDpyb290' },
    ]) {
      const res = await app.inject({ ...c.ok, headers });
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json()).toMatchObject({ code: 'UNAUTHENTICATED' });
    }
    // Refused before the body is read: even a body the schema refuses answers 401, not 400.
    expect((await app.inject({ ...c.bad, headers: {} })).statusCode).toBe(401);
    expect(f.actions).toEqual([]);
    expect(f.calls).toEqual([]);
  });

  it.skipIf(c.scope === 'public' || c.scope === 'auditor')('answers 403 to a narrower scope', async () => {
    const f = fixture();
    const narrower = NARROWER[c.scope as AdminScope]!;
    const res = await api(f).inject({ ...c.ok, headers: auth(narrower) });
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json()).toMatchObject({ code: 'FORBIDDEN' });
    expect(res.json().message).toContain(c.scope);
    expect(f.actions).toEqual([]);
  });

  it('answers 429 once its limit is spent, with Retry-After', async () => {
    const f = fixture();
    // Public routes are limited by address before authentication; others by token.
    const app = api(f, c.scope === 'public' ? { perIp: 2 } : { perToken: 2, sensitive: 2 });
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) {
      // Requests that fail (a run already started, a round no longer open) still count.
      codes.push((await app.inject({ ...c.ok, headers: token })).statusCode);
    }
    expect(codes[0]).toBe(c.status);
    const last = await app.inject({ ...c.ok, headers: token });
    expect(last.statusCode, last.body).toBe(429);
    expect(last.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
  });
});

describe('limits and refusals across routes', () => {
  it('rollback and key rotation have their own, tighter bucket per token', async () => {
    const f = fixture();
    const app = api(f, { perToken: 100, sensitive: 1 });
    const rollback = {
      method: 'POST' as const,
      url: '/v1/versions/rollback',
      payload: { target: '@1' },
      headers: auth('admin'),
    };
    expect((await app.inject(rollback)).statusCode).toBe(202);
    expect((await app.inject(rollback)).statusCode).toBe(429);
    // Another token still may; other routes still answer the same token.
    expect(
      (await app.inject({ ...rollback, headers: { authorization: 'Bearer tok-admin-2' } })).statusCode,
    ).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/v1/status', headers: auth('admin') })).statusCode).toBe(
      200,
    );
  });

  it('a token limit is per token: another token is not held back', async () => {
    const f = fixture();
    const app = api(f, { perToken: 1 });
    expect((await app.inject({ url: '/v1/status', headers: auth('auditor') })).statusCode).toBe(200);
    expect((await app.inject({ url: '/v1/status', headers: auth('auditor') })).statusCode).toBe(429);
    expect((await app.inject({ url: '/v1/status', headers: auth('operator') })).statusCode).toBe(200);
  });

  it('a registry change of the wrong kind or member is 400 and logs nothing', async () => {
    const f = fixture();
    const app = api(f);
    const revokeOther = await app.inject({
      method: 'POST',
      url: '/v1/sites/site-3/revoke',
      headers: auth('admin'),
      payload: { change: change('revoke', 'site-2') },
    });
    expect(revokeOther.statusCode).toBe(400);
    expect(revokeOther.json()).toMatchObject({ code: 'REGISTRY_CHANGE_KIND' });
    const rotateAsEnroll = await app.inject({
      method: 'POST',
      url: '/v1/sites',
      headers: auth('admin'),
      payload: { change: change('rotate', 'site-1') },
    });
    expect(rotateAsEnroll.json()).toMatchObject({ statusCode: 400, code: 'REGISTRY_CHANGE_KIND' });
    const garbage = await app.inject({
      method: 'POST',
      url: '/v1/keys/rotate',
      headers: auth('admin'),
      payload: { change: Buffer.from('not a change').toString('base64') },
    });
    expect(garbage.json()).toMatchObject({ statusCode: 400, code: 'REGISTRY_INVALID' });
    expect(f.actions).toEqual([]);
  });

  it("the coordinator's refusals answer their code's status", async () => {
    const f = fixture();
    const app = api(f);
    f.state.registryRefusal = refusal('REGISTRY_CHANGE_REFUSED', 'site-3 is already revoked');
    const refused = await app.inject({
      method: 'POST',
      url: '/v1/sites/site-3/revoke',
      headers: auth('admin'),
      payload: { change: change('revoke', 'site-3') },
    });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toEqual({
      statusCode: 409,
      code: 'REGISTRY_CHANGE_REFUSED',
      error: 'Conflict',
      message: 'site-3 is already revoked',
    });
    const head = await app.inject({
      method: 'POST',
      url: '/v1/versions/rollback',
      headers: auth('admin'),
      payload: { target: 'HEAD' },
    });
    expect(head.json()).toMatchObject({ statusCode: 409, code: 'ROLLBACK_REFUSED' });
    const unknown = await app.inject({ url: '/v1/versions/ffff', headers: auth('auditor') });
    expect(unknown.json()).toMatchObject({ statusCode: 404, code: 'REF_UNKNOWN' });
    const notOpen = await app.inject({
      method: 'POST',
      url: '/v1/rounds/5/abort',
      headers: auth('operator'),
      payload: {},
    });
    expect(notOpen.json()).toMatchObject({ statusCode: 409, code: 'ROUND_NOT_OPEN' });
    const noRun = await app.inject({ method: 'POST', url: '/v1/runs/run-9/stop', headers: auth('operator') });
    expect(noRun.json()).toMatchObject({ statusCode: 404, code: 'RUN_UNKNOWN' });
    const started = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth('operator'),
      payload: { rounds: 1 },
    });
    expect(started.statusCode).toBe(201);
    const again = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: auth('operator'),
      payload: { rounds: 1 },
    });
    expect(again.json()).toMatchObject({ statusCode: 409, code: 'RUN_ACTIVE' });
    const stop = await app.inject({ method: 'POST', url: '/v1/runs/run-1/stop', headers: auth('operator') });
    expect(stop.json()).toMatchObject({ id: 'run-1', state: 'stopping', stoppedBy: 'ops' });
    // One action per accepted request, none for refused ones checked before acting.
    expect(f.actions.map((a) => a.action)).toEqual(['registry.revoke', 'runs.start', 'runs.stop']);
  });

  it('an empty optional slot is 501, an unexpected failure a bare 500', async () => {
    const f = fixture();
    const { metrics: _m, exportAuditBundle: _a, ...rest } = f.deps;
    const app = api({
      ...f,
      deps: {
        ...rest,
        history: { ...f.deps.history, timeline: () => Promise.reject(new Error('secret detail')) },
      },
    });
    const metrics = await app.inject({ url: '/metrics', headers: auth('operator') });
    expect(metrics.json()).toMatchObject({ statusCode: 501, code: 'NOT_CONFIGURED' });
    expect((await app.inject({ url: '/v1/audit/bundle', headers: auth('auditor') })).statusCode).toBe(501);
    const failed = await app.inject({ url: '/v1/versions', headers: auth('auditor') });
    expect(failed.json()).toEqual({
      statusCode: 500,
      code: 'INTERNAL',
      error: 'Internal Server Error',
      message: 'internal error',
    });
  });

  it('readiness is 503 while the coordinator starts', async () => {
    const f = fixture();
    f.state.phase = 'starting';
    const res = await api(f).inject({ url: '/v1/ready' });
    expect(res.json()).toMatchObject({ statusCode: 503, code: 'NOT_STARTED' });
  });

  it('with metricsPublic, /metrics needs no token', async () => {
    const f = fixture();
    const app = buildAdminApi(f.deps, { tokens: TOKENS, metricsPublic: true });
    apps.push(app);
    const res = await app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4');
    expect(res.body).toBe('cohort_up 1\n');
  });
});
