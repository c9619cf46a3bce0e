// The registry by hand: `cohort registry create` from the members' public files, `show` with its
// SHA-256, and a member refusing at start a configuration whose pin does not match.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import { parseConfig } from '../../src/config/index.ts';
import { loadRegistry } from '../../src/registry/index.ts';
import { openMember, runKeyCeremony } from '../../src/services/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { cohort } from '../helpers/run-cli.ts';

const root = mkdtempSync(join(tmpdir(), 'cohort-registry-cli-'));
const keys = join(root, 'keys');
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SITES = ['site-1', 'site-2', 'site-3'];
let pin: { path: string; sha256: string };

/** The federation's configuration, with `registry` as its pin. */
function configInput(registry: { path: string; sha256: string } | undefined, federation = 'hand') {
  return {
    federation: { id: federation, mode: 'he' as const },
    nats: { servers: ['nats://127.0.0.1:1'] },
    members: {
      coordinator: 'coordinator',
      aggregators: [{ id: 'agg-1' }],
      sites: SITES.map((id) => ({ id })),
      auditors: [],
      keysDir: keys,
      ...(registry === undefined ? {} : { registry }),
    },
  };
}

function writeConfig(name: string, input: object): string {
  const path = join(root, name);
  writeFileSync(path, stringify(input));
  return path;
}

beforeAll(async () => {
  const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  pin = runKeyCeremony({
    dir: keys,
    federation: 'hand',
    coordinator: 'coordinator',
    aggregators: ['agg-1'],
    sites: SITES,
    algorithm: 'falcon-512',
    ckks,
    unenrolled: ['site-3'],
  }).registry;
});

describe('cohort registry create / show', () => {
  it('builds and signs the registry from the public files; show prints it with its SHA-256', async () => {
    const config = writeConfig('create.yaml', configInput(undefined));
    const out = join(root, 'registry.bin');
    const created = await cohort(
      'registry',
      'create',
      '--config',
      config,
      '--officer-key',
      join(keys, 'officer', 'officer.key'),
      '--out',
      out,
      '--exclude',
      'site-3',
    );
    expect(created.status, created.stderr).toBe(0);
    const sha256 = /^sha256: ([0-9a-f]{64})$/m.exec(created.stdout)![1]!;
    expect(created.stdout).toContain(`    sha256: ${sha256}`);
    const registry = loadRegistry(out, sha256).registry;
    expect(registry.members.map((m) => [m.id, m.role])).toEqual([
      ['agg-1', 'aggregator'],
      ['coordinator', 'coordinator'],
      ['site-1', 'site'],
      ['site-2', 'site'],
    ]);
    expect(registry.members.every((m) => m.nkey?.startsWith('U'))).toBe(true);

    const shown = await cohort('registry', 'show', out, '--sha256', sha256);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`sha256: ${sha256}`);
    expect(shown.stdout).toMatch(/^ {2}site-1 site falcon-512 [0-9a-f]{32} kem [0-9a-f]{16} nkey U/m);
    const json = JSON.parse((await cohort('registry', 'show', out, '--json')).stdout) as {
      members: unknown[];
    };
    expect(json.members).toHaveLength(4);

    const refused = await cohort('registry', 'show', out, '--sha256', '0'.repeat(64));
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/REGISTRY_PIN_MISMATCH.*registry\.bin/);
  });

  it('refuses a member missing its public files, naming the file', async () => {
    const config = writeConfig('missing.yaml', configInput(undefined));
    const run = await cohort(
      'registry',
      'create',
      '--config',
      config,
      '--officer-key',
      join(keys, 'officer', 'officer.key'),
      '--out',
      join(root, 'never.bin'),
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/KEY_FILE_UNREADABLE.*site-3\.pub/);
  });
});

describe('a configuration pinning the registry', () => {
  it('opens a member on the pinned registry (its keys from the registry, not the .pub folder)', async () => {
    // Only the start is checked here: a server that is not there fails the connection afterwards.
    const config = parseConfig(configInput(pin));
    await expect(openMember(config, 'site-1')).rejects.toMatchObject({
      code: expect.stringMatching(/^TRANSPORT_/),
    });
  });

  it('is refused at start when the pin does not match, naming the file', async () => {
    const wrong = {
      ...pin,
      sha256: `${pin.sha256.slice(0, 60)}${pin.sha256.endsWith('0000') ? 'ffff' : '0000'}`,
    };
    const config = parseConfig(configInput(wrong));
    const err = await openMember(config, 'site-1').catch((e: unknown) => e);
    expect(
      errorCode(() => {
        throw err;
      }),
    ).toBe('REGISTRY_PIN_MISMATCH');
    expect((err as Error).message).toContain(pin.path);

    const path = writeConfig('wrong-pin.yaml', configInput(wrong));
    const agent = await cohort('agent', '--config', path, '--member', 'site-1');
    expect(agent.status).not.toBe(0);
    expect(agent.stderr).toMatch(/REGISTRY_PIN_MISMATCH/);
  });

  it('is refused when the registry is of another federation, or the pin is not a SHA-256', async () => {
    const other = parseConfig({ ...configInput(pin), federation: { id: 'other', mode: 'he' } });
    const err = await openMember(other, 'site-1').catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/registry of federation "hand", not other/);
    expect(() => parseConfig(configInput({ ...pin, sha256: 'abc' }))).toThrow(/members\.registry\.sha256/);
  });
});
