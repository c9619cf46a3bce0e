// Cohort installs like a Node tool: `npm pack` builds the package (compiled JavaScript with
// declarations, no TypeScript source) and packs it, `npm install -g ./cohort-*.tgz` puts it in a
// fresh prefix, and from another folder `cohort --version` and `cohort demo` run from
// node_modules, where Node strips no types. Needs the npm registry (or its cache) for the
// dependencies, as `npm ci` does.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** The environment of a user's shell: npm's per-script variables left out. */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

describe('npm pack, npm install -g, cohort from another folder', () => {
  let work: string;
  let tarball: string;
  let prefix: string;
  let elsewhere: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'cohort-package-'));
    // `npm pack` at the root builds first (prepack: .ci/package.ts), then packs.
    const packed = spawnSync('npm', ['pack', '--pack-destination', work, '--json'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 240_000,
      env: userEnv(),
    });
    expect(packed.status, packed.stderr).toBe(0);
    tarball = join(work, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
    prefix = join(work, 'prefix');
    const installed = spawnSync(
      'npm',
      ['install', '-g', '--prefix', prefix, tarball, '--prefer-offline', '--no-audit', '--no-fund'],
      { cwd: work, encoding: 'utf8', timeout: 240_000, env: userEnv() },
    );
    expect(installed.status, installed.stderr).toBe(0);
    elsewhere = mkdtempSync(join(tmpdir(), 'cohort-elsewhere-'));
  }, 480_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
    if (elsewhere) rmSync(elsewhere, { recursive: true, force: true });
  });

  it('is compiled JavaScript with declarations, a bin, exports and the files it reads', () => {
    const pkgDir = join(prefix, 'lib', 'node_modules', 'cohort');
    const all = files(pkgDir).filter((f) => !f.includes(`${pkgDir}/node_modules/`));
    expect(all.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const built = join(pkgDir, 'build', 'package');
    expect(existsSync(join(built, 'src/cli/main.js'))).toBe(true);
    expect(existsSync(join(built, 'src/services/index.d.ts'))).toBe(true);
    expect(readFileSync(join(built, 'src/services/index.d.ts'), 'utf8')).not.toMatch(/from '\.[^']*\.ts'/);
    expect(existsSync(join(built, 'src/protocol/cohort.proto'))).toBe(true);
    const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg).toMatchObject({ bin: { cohort: './bin/cohort.js' }, type: 'module' });
    const exported = (pkg.exports as Record<string, { default: string }>)['./services']!;
    expect(existsSync(join(pkgDir, exported.default))).toBe(true);
    expect(existsSync(join(pkgDir, 'node_modules', 'typescript'))).toBe(false);
  });

  it('`cohort --version` runs from the installed bin in another folder', () => {
    const r = spawnSync(join(prefix, 'bin', 'cohort'), ['--version'], {
      cwd: elsewhere,
      encoding: 'utf8',
      env: userEnv(),
    });
    expect(r.status, r.stderr).toBe(0);
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
      .version;
    expect(r.stdout.trim()).toBe(version);
  });

  it('`cohort demo` commits a round and the auditor verifies it, from another folder', () => {
    const r = spawnSync(
      join(prefix, 'bin', 'cohort'),
      ['demo', '--rounds', '1', '--sites', '3', '--train-limit', '3000'],
      {
        cwd: elsewhere,
        encoding: 'utf8',
        env: userEnv(),
        timeout: 240_000,
      },
    );
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^round 1: 3\/3 contributors, COMMIT [0-9a-f]{12}/m);
    expect(r.stdout).toMatch(/^audit \(auditor-1, read-only NATS user\): verified .* 0 problems$/m);
  }, 240_000);
});
