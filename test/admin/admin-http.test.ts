// The admin API over real HTTP (listening on 127.0.0.1, port 0, read back) and over HTTPS with a
// certificate of the federation CA; `cohort status` against it, its token from a file or the
// environment, never from argv.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServedAdminApi, serveAdminApi } from '../../src/admin/index.ts';
import { type CliContext, runCli } from '../../src/cli/index.ts';
import { parseConfig } from '../../src/config/index.ts';
import { createFederationTls } from '../../src/services/index.ts';
import { auth, type Fixture, fixture, TOKEN, TOKENS } from './admin-fixture.ts';

const ADMIN = {
  host: '127.0.0.1',
  port: 0,
  tokens: TOKENS.map((t) => ({ ...t, scopes: [...t.scopes] })),
  metricsPublic: false,
  rateLimit: { windowMs: 60_000, perIp: 1000, perToken: 1000, sensitive: 2 },
};

let dir: string;
let f: Fixture;
let api: ServedAdminApi;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cohort-admin-http-'));
  f = fixture();
  api = await serveAdminApi(parseConfig({ federation: { id: 'adm' }, admin: ADMIN }).admin!, f.deps);
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

async function cli(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CliContext = {
    stdout: { write: (s) => out.push(s) },
    stderr: { write: (s) => err.push(s) },
    env,
  };
  const status = await runCli(['node', 'cohort', ...args], ctx);
  return { status, stdout: out.join(''), stderr: err.join('') };
}

describe('admin API over HTTP', () => {
  it('listens on the loopback address with the bound port', () => {
    expect(api.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
  });

  it('answers 2xx, 400, 401, 403 and 429 with JSON error bodies', async () => {
    expect((await call('GET', '/v1/status', auth('auditor'))).status).toBe(200);
    const bad = await call('POST', '/v1/runs', auth('operator'), { rounds: 2, extra: 'x' });
    expect(bad).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED', field: 'body.extra' } });
    const none = await call('POST', '/v1/runs', {}, { rounds: 2 });
    expect(none).toMatchObject({ status: 401, body: { code: 'UNAUTHENTICATED' } });
    const narrow = await call('POST', '/v1/versions/rollback', auth('operator'), { target: '@1' });
    expect(narrow).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    const started = await call('POST', '/v1/runs', auth('operator'), { rounds: 2 });
    expect(started).toMatchObject({ status: 201, body: { id: 'run-1', startedBy: 'ops' } });
    for (let i = 0; i < 2; i++) {
      expect((await call('POST', '/v1/versions/rollback', auth('admin'), { target: '@1' })).status).toBe(202);
    }
    const limited = await call('POST', '/v1/versions/rollback', auth('admin'), { target: '@1' });
    expect(limited).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(f.actions.map((a) => `${a.action} by ${a.caller}`)).toEqual([
      'runs.start by ops',
      'versions.rollback by root',
      'versions.rollback by root',
    ]);
  });

  it('serves a model export as a download', async () => {
    const res = await fetch(`${api.url}/v1/versions/@2/export`, { headers: auth('operator') });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="model-2.safetensors"');
    expect(await res.text()).toBe('model 2');
  });

  it('`cohort status` prints the federation from the API, with the token from the environment', async () => {
    const run = await cli(['status', '--url', api.url], { COHORT_ADMIN_TOKEN: TOKEN.auditor });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('federation adm: collecting, round 6');
    expect(lines[1]).toMatch(/^head [0-9a-f]{12} \(height 4\), log entry 12$/);
    expect(lines[2]).toBe('sites: 2/3 live (site-1, site-2); excluded: site-3; revoked: -');
    expect(lines[3]).toBe('aggregators: 1/1 live (agg-1)');
    expect(lines[4]).toBe('run: run-1 running, 0/2 rounds (0 committed, 0 aborted), started by ops');
    expect(lines).toContain('  round 3  ABORT   site-2 voted NO');
    expect(lines).toContain('  round 6  open    1 participants');
  });

  it('`cohort status --json` prints the API answer; a token file must be owner-only', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, `${TOKEN.auditor}\n`, { mode: 0o600 });
    const run = await cli(['status', '--url', api.url, '--token-file', file, '--json']);
    expect(run.status, run.stderr).toBe(0);
    const json = JSON.parse(run.stdout) as Record<string, unknown>;
    const direct = await call('GET', '/v1/status', auth('auditor'));
    expect(json).toEqual(direct.body);
    chmodSync(file, 0o644);
    const loose = await cli(['status', '--url', api.url, '--token-file', file]);
    expect(loose.status).toBe(2);
    expect(loose.stderr).toContain('KEY_FILE_PERMISSIONS');
  });

  it('`cohort status` exits 2 with the API error code for a wrong token, or without one', async () => {
    const wrong = await cli(['status', '--url', api.url], { COHORT_ADMIN_TOKEN: 'nope' });
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('error [UNAUTHENTICATED]');
    const none = await cli(['status', '--url', api.url]);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('COHORT_ADMIN_TOKEN');
  });

  it('`cohort admin token` prints a token whose SHA-256 is the configuration entry', async () => {
    const run = await cli(['admin', 'token', '--id', 'ops-2', '--scopes', 'operator,auditor']);
    expect(run.status, run.stderr).toBe(0);
    const token = /^token: (\S+)$/m.exec(run.stdout)![1]!;
    const sha = /^sha256: ([0-9a-f]{64})$/m.exec(run.stdout)![1]!;
    const { hashToken } = await import('../../src/admin/index.ts');
    expect(hashToken(token)).toBe(sha);
    expect(run.stdout).toContain(`{ id: ops-2, sha256: ${sha}, scopes: [operator, auditor] }`);
    const out = join(dir, 'new.token');
    const written = await cli(['admin', 'token', '--id', 'x', '--out', out]);
    expect(written.stdout).not.toMatch(/^token: /m);
    expect(hashToken(readFileSync(out, 'utf8').trim())).toBe(
      /^sha256: ([0-9a-f]{64})$/m.exec(written.stdout)![1],
    );
  });
});

describe('admin API over HTTPS', () => {
  it('serves with admin.tls and refuses a client that does not trust the CA', async () => {
    const tlsDir = join(dir, 'tls');
    const { server } = createFederationTls(tlsDir, { hosts: ['127.0.0.1', 'localhost'] });
    const config = parseConfig({
      federation: { id: 'adm' },
      admin: { ...ADMIN, tls: { cert: server.cert, key: server.key } },
    }).admin!;
    const secure = await serveAdminApi(config, fixture().deps);
    try {
      expect(secure.url).toMatch(/^https:\/\/127\.0\.0\.1:/);
      const get = (ca?: Buffer) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = request(
            `${secure.url}/v1/status`,
            { headers: auth('auditor'), ...(ca === undefined ? {} : { ca }) },
            (res) => {
              let body = '';
              res.on('data', (d) => {
                body += d;
              });
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            },
          );
          req.on('error', reject);
          req.end();
        });
      const ok = await get(readFileSync(server.ca));
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.body)).toMatchObject({ federation: 'adm' });
      await expect(get()).rejects.toThrow(/certificate/);
    } finally {
      await secure.close();
    }
  });
});
