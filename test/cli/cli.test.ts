import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CliContext, runCli } from '../../src/cli/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `node bin/cohort.js ...args` in the repository root without COHORT__ variables. */
function cohort(args: string[], extraEnv: Record<string, string> = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('COHORT__')));
  const r = spawnSync(process.execPath, ['bin/cohort.js', ...args], {
    encoding: 'utf8',
    env: { ...env, ...extraEnv },
    timeout: 30_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function bad(yaml: string): string {
  const p = join(dir, `bad-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(p, yaml);
  return p;
}

describe('cohort CLI (spawned)', () => {
  it('config check accepts the example config', () => {
    const r = cohort(['config', 'check', 'config/federation.example.yaml']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ok: federation demo-federation\n');
    expect(r.status).toBe(0);
  });

  it('config check exits 2 and names every bad field path', () => {
    const p = bad('federation:\n  id: f\ncrypto:\n  ckks:\n    coeffModulus: [60, 61]\ncodec:\n  bitz: 8\n');
    const r = cohort(['config', 'check', p]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error \[CONFIG_INVALID\]: /);
    expect(r.stderr).toContain('crypto.ckks.coeffModulus[1]: must be ≤ 60');
    expect(r.stderr).toContain('codec.bitz: unknown key');
  });

  it('config check exits 2 on an unreadable file', () => {
    const r = cohort(['config', 'check', join(dir, 'nope.yaml')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error \[CONFIG_UNREADABLE\]: /);
  });

  it('applies --set and COHORT__ overrides, flags winning', () => {
    const r = cohort(
      [
        'config',
        'print',
        'config/federation.example.yaml',
        '--set',
        'nats.timeoutMs=7000',
        '-s',
        'codec.bits=4',
      ],
      { COHORT__NATS__TIMEOUT_MS: '5000', COHORT__NATS__MAX_RETRY: '9' },
    );
    expect(r.status).toBe(0);
    const cfg = JSON.parse(r.stdout);
    expect(cfg.nats).toEqual({ servers: ['nats://127.0.0.1:4222'], maxRetry: 9, timeoutMs: 7000 });
    expect(cfg.codec.bits).toBe(4);
  });

  it('version prints the package version', () => {
    const r = cohort(['version']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^cohort 0\.1\.0 \(node v\d+/);
  });

  it('an unknown command is a usage error: exit 2', () => {
    const r = cohort(['frobnicate']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("unknown command 'frobnicate'");
  });
});

describe('runCli (in-process)', () => {
  function context(env: Record<string, string> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    const ctx: CliContext = {
      stdout: { write: (s) => out.push(s) },
      stderr: { write: (s) => err.push(s) },
      env,
    };
    return { ctx, out, err };
  }

  it('config print writes the validated config with defaults as JSON', async () => {
    const p = bad('federation:\n  id: small\n');
    const { ctx, out, err } = context();
    expect(await runCli(['node', 'cohort', 'config', 'print', p], ctx)).toBe(0);
    expect(err).toEqual([]);
    const cfg = JSON.parse(out.join(''));
    expect(cfg.federation).toEqual({ id: 'small', mode: 'he' });
    expect(cfg.crypto.ckks.coeffModulus).toEqual([60, 40, 60]);
    expect(cfg.log.level).toBe('info');
  });

  it('--no-env ignores COHORT__ variables', async () => {
    const { ctx, out } = context({ COHORT__CODEC__BITS: '3' });
    const args = ['node', 'cohort', 'config', 'check', 'config/federation.example.yaml'];
    expect(await runCli(args, ctx)).toBe(2);
    expect(await runCli([...args, '--no-env'], ctx)).toBe(0);
    expect(out.join('')).toBe('ok: federation demo-federation\n');
  });

  it('a --set entry without "=" is a CONFIG_INVALID error', async () => {
    const { ctx, err } = context();
    const code = await runCli(
      ['node', 'cohort', 'config', 'check', 'config/federation.example.yaml', '-s', 'x'],
      ctx,
    );
    expect(code).toBe(2);
    expect(err.join('')).toContain('error [CONFIG_INVALID]: --set expects path=value');
  });
});
