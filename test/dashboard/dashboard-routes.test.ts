// The dashboard's routes without a browser: the static files under their CSP, `GET /v1/whoami`, and
// `GET /v1/audit/verify` over a stand-in audit (501 while unwired). The page in Chromium over a real
// federation is dashboard.test.ts.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type AdminDeps, buildAdminApi, DASHBOARD_CSP } from '../../src/admin/index.ts';
import type { AuditReport } from '../../src/audit/index.ts';
import { auth, fixture, TOKENS } from '../admin/admin-fixture.ts';

const DIR = fileURLToPath(new URL('../../src/admin/dashboard/', import.meta.url));

const apps: ReturnType<typeof buildAdminApi>[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

function api(deps: AdminDeps = fixture().deps) {
  const app = buildAdminApi(deps, { tokens: TOKENS });
  apps.push(app);
  return app;
}

/** A report as `verifyAudit` makes it: one problem and one COMMIT whose aggregate was checked. */
function report(problems: AuditReport['problems'] = []): AuditReport {
  return {
    federation: 'adm',
    source: {
      kind: 'live',
      stream: 'COHORT_adm',
      member: 'coordinator',
      exportedUnixMs: null,
      sealedBy: null,
    },
    registry: 'ab'.repeat(32),
    genesis: 'cd'.repeat(32),
    head: { hash: 'ef'.repeat(32), height: 1, sequence: 2 },
    entries: 2,
    lastEntry: { sequence: 2, hash: '01'.repeat(32) },
    historyThrough: 2,
    rounds: [
      {
        round: 1,
        sequence: 2,
        outcome: 'commit',
        kind: 'round',
        commit: 'ef'.repeat(32),
        height: 1,
        aggregate: 'verified',
      },
    ],
    checked: {
      signatures: 2,
      links: 2,
      historyRules: 2,
      commitHashes: 1,
      aggregates: 1,
      registryChanges: 0,
      snapshots: 0,
      adminActions: 0,
      uncheckedKinds: 0,
    } as AuditReport['checked'],
    problems,
    unchecked: [],
    verified: problems.length === 0,
  };
}

describe('dashboard files', () => {
  it.each([
    ['/dashboard/', 'text/html', 'index.html'],
    ['/dashboard', 'text/html', 'index.html'],
    ['/dashboard/dashboard.js', 'text/javascript', 'dashboard.js'],
    ['/dashboard/dashboard.css', 'text/css', 'dashboard.css'],
  ])('serves %s without a token, under the CSP', async (url, type, file) => {
    const res = await api().inject({ url });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(`${type}; charset=utf-8`);
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.body).toBe(readFileSync(`${DIR}${file}`, 'utf8'));
  });

  it('the CSP allows no inline code, no other origin and no framing', () => {
    const directives = new Map(
      DASHBOARD_CSP.split(';').map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name!, values.join(' ')];
      }),
    );
    expect(Object.fromEntries(directives)).toEqual({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'connect-src': "'self'",
      'img-src': "'self' data:",
      'base-uri': "'none'",
      'form-action': "'none'",
      'frame-ancestors': "'none'",
    });
  });

  it('the page loads only its own files: no inline script or style, no other origin', () => {
    const html = readFileSync(`${DIR}index.html`, 'utf8');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const js = readFileSync(`${DIR}dashboard.js`, 'utf8');
    // Member-supplied strings go in as text: nothing in the module parses HTML or evaluates code.
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
    expect(js).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
  });
});

describe('GET /v1/whoami', () => {
  it.each(TOKENS)("answers $id's id and scopes", async (t) => {
    const scope = t.scopes[0]!;
    const res = await api().inject({ url: '/v1/whoami', headers: auth(scope) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ tokenId: t.id, scopes: [scope] });
  });

  it('answers 401 without a token', async () => {
    const res = await api().inject({ url: '/v1/whoami' });
    expect(res.json()).toMatchObject({ statusCode: 401, code: 'UNAUTHENTICATED' });
  });
});

describe('GET /v1/audit/verify', () => {
  it('answers 501 while no audit is wired', async () => {
    const res = await api().inject({ url: '/v1/audit/verify', headers: auth('auditor') });
    expect(res.json()).toMatchObject({ statusCode: 501, code: 'NOT_CONFIGURED' });
  });

  it('summarizes the report; concurrent callers share one audit; aggregates=false skips them', async () => {
    const calls: boolean[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const deps: AdminDeps = {
      ...fixture().deps,
      verifyLog: async ({ skipAggregates }) => {
        calls.push(skipAggregates);
        await gate;
        return report();
      },
    };
    const app = api(deps);
    const pending = [1, 2, 3].map(() => app.inject({ url: '/v1/audit/verify', headers: auth('auditor') }));
    // Another token: a token runs one audit job at a time (a second option is a second job).
    const skipping = app.inject({ url: '/v1/audit/verify?aggregates=false', headers: auth('operator') });
    await expect.poll(() => calls.length).toBe(2);
    release();
    const answers = await Promise.all(pending);
    expect(calls).toEqual([false, true]);
    for (const res of answers) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({
        verified: true,
        head: { height: 1 },
        problemCount: 0,
        rounds: [{ round: 1, aggregate: 'verified' }],
        checked: { signatures: 2, links: 2, commitHashes: 1, aggregates: 1 },
        aggregatesSkipped: false,
      });
      expect(res.json()).not.toHaveProperty('source');
    }
    expect((await skipping).json()).toMatchObject({ aggregatesSkipped: true });
    // Once done, a call at the same log head is answered from that audit.
    const again = await app.inject({ url: '/v1/audit/verify', headers: auth('operator') });
    expect(again.json()).toEqual(answers[0]!.json());
    expect(calls).toEqual([false, true]);
  });

  it('bounds the problems it lists and counts them all', async () => {
    const problems = Array.from({ length: 150 }, (_, i) => ({
      sequence: i + 1,
      code: 'CHAIN_BROKEN' as const,
      message: `entry ${i + 1}`,
    }));
    const app = api({ ...fixture().deps, verifyLog: async () => report(problems) });
    const body = (await app.inject({ url: '/v1/audit/verify', headers: auth('auditor') })).json();
    expect(body).toMatchObject({ verified: false, problemCount: 150 });
    expect(body.problems).toHaveLength(100);
    expect(body.problems[0]).toEqual({ sequence: 1, code: 'CHAIN_BROKEN', message: 'entry 1' });
  });

  it('refuses an unknown query field', async () => {
    const res = await api().inject({ url: '/v1/audit/verify?deep=1', headers: auth('auditor') });
    expect(res.json()).toMatchObject({ statusCode: 400, field: 'querystring.deep' });
  });
});

describe('rounds for the dashboard', () => {
  it('lists rounds with their timings and evaluation, and a round with its assignments', async () => {
    const app = api();
    const rounds = (await app.inject({ url: '/v1/rounds?limit=3', headers: auth('auditor') })).json();
    expect(rounds.map((r: { round: number }) => r.round)).toEqual([6, 5, 4]);
    for (const r of rounds) {
      expect(r.openedUnixMs).toBeGreaterThan(0);
      expect(r).toHaveProperty('evaluation');
    }
    expect(rounds[0]).toMatchObject({ status: 'open', durationMs: null, evaluation: null });
    expect(rounds[1].durationMs).toBeGreaterThanOrEqual(0);
    const detail = (await app.inject({ url: '/v1/rounds/2', headers: auth('auditor') })).json();
    expect(detail.assignments.map((a: { site: string }) => a.site)).toEqual(detail.participants);
    for (const a of detail.assignments) {
      expect(a.aggregator).toMatch(/^agg-/);
      expect(a.examples).toBeGreaterThan(0);
    }
  });
});
