import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'cohort-agent-site-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

// A federation with a contract, a NATS URL nothing listens on and no keys at all: an agent that got
// past its data check would fail on its signing key or the connection, with another error.
const federation = write(
  'federation.yaml',
  [
    'federation: { id: agent-site-config }',
    'nats: { servers: ["nats://127.0.0.1:9"], maxRetry: 0, timeoutMs: 500 }',
    `members: { aggregators: [{ id: agg-1 }], sites: [{ id: site-1 }, { id: site-2 }], keysDir: ${join(dir, 'keys')}, registry: { path: ${join(dir, 'keys', 'public', 'registry.bin')}, sha256: '${'0'.repeat(64)}' } }`,
    'data:',
    '  kind: tabular',
    '  features: [{ name: radius_mean }, { name: texture_mean }]',
    '  label: { name: diagnosis, classes: [B, M] }',
    '',
  ].join('\n'),
);

function agent(...args: string[]) {
  return spawnSync(process.execPath, ['bin/cohort.js', 'agent', '--config', federation, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
}

describe('cohort agent --site-config', () => {
  it('stops at start, before connecting, when the site data breaks the contract', () => {
    const csv = write('a.csv', 'radius_mean,texture_mean,diagnosis\n1,2,B\n3,4,M\n5,6,X\n');
    const site = write('site.yaml', 'data:\n  csv: { path: a.csv }\n');
    const r = agent('--member', 'site-1', '--site-config', site);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `error [DATA_LABEL_RANGE]: ${csv} line 4, field "diagnosis": label "X" is not one of B, M\n`,
    );
  });

  it.each([
    [
      'a missing column',
      'radius_mean,diagnosis\n1,B\n',
      (csv: string) =>
        `error [DATA_FORMAT]: ${csv} line 1: column "texture_mean" (contract feature 2) is missing; header has: radius_mean, diagnosis\n`,
    ],
    [
      'text in a number column',
      'radius_mean,texture_mean,diagnosis\n1,2,B\n3,abc,M\n',
      (csv: string) => `${csv} line 3, field "texture_mean": "abc" is not a number`,
    ],
  ])('stops at start on %s, naming file, line and field', (_what, text, message) => {
    const csv = write(`${_what.replaceAll(' ', '-')}.csv`, text);
    const site = write(`${_what.replaceAll(' ', '-')}.yaml`, `data:\n  csv: { path: ${csv} }\n`);
    const r = agent('--member', 'site-1', '--site-config', site);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message(csv));
  });

  it('stops at start on a site configuration that does not fit the contract', () => {
    write('b.csv', 'Radius,texture_mean,diagnosis\n1,2,B\n');
    const site = write('mapped.yaml', 'data:\n  csv: { path: b.csv, columns: { radius_maen: Radius } }\n');
    const r = agent('--member', 'site-1', '--site-config', site);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /^error \[CONFIG_INVALID\]: invalid configuration in .*mapped\.yaml \(1 issue\):\n/,
    );
    expect(r.stderr).toContain(
      "data.csv.columns.radius_maen: not a feature of the data contract (did you mean 'radius_mean'?)",
    );
  });

  it('checks the member and the site configuration file before reading data', () => {
    const site = write('ok.yaml', 'data:\n  csv: { path: a.csv }\n');
    const notSite = agent('--member', 'agg-1', '--site-config', site);
    expect(notSite.status).toBe(2);
    expect(notSite.stderr).toMatch(/agg-1 is not one of members\.sites \(site-1, site-2\)/);
    const missing = agent('--member', 'site-2', '--site-config', join(dir, 'absent.yaml'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(
      /^error \[CONFIG_UNREADABLE\]: cannot read configuration file .*absent\.yaml/,
    );
  });

  it('with data that fits, goes on to open the member (here: no keys, so that fails next)', () => {
    write('good.csv', 'radius_mean,texture_mean,diagnosis\n1,2,B\n3,4,M\n');
    const site = write('good.yaml', 'data:\n  csv: { path: good.csv }\n');
    const r = agent('--member', 'site-1', '--site-config', site);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(
      'site data of site-1 fits the data contract: 2 training rows, no validation rows',
    );
    expect(r.stderr).not.toMatch(/DATA_|CONFIG_INVALID/);
  });
});
