// The threshold key ceremony by hand (`cohort keys threshold deal|collect`), as sites on separate
// hosts run it: each deals where its keys are, then each collects once all have dealt. Every site
// prints the same epoch id; each key file is owner-only; no pending secret survives; collecting
// before every site has dealt names what is missing; the epoch file checks out against the
// registry and the pin.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { DEFAULT_THRESHOLD_PARAMS, getThresholdContext } from '../../crypto/threshold/index.ts';
import { RegistryView } from '../../src/registry/index.ts';
import { createLocalDeployment, type LocalDeployment } from '../../src/services/index.ts';
import { loadPinnedRegistry } from '../../src/services/member-context.ts';
import { loadThresholdEpoch } from '../../src/services/threshold-dealing.ts';
import { cohort } from '../helpers/run-cli.ts';

describe('cohort keys threshold deal | collect', () => {
  let dir: string;
  let dep: LocalDeployment;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cohort-keys-threshold-'));
    // Made with a shared key, so that no threshold ceremony has run yet: the test runs it by hand,
    // after the operator's move to threshold keys (the default): the shared key's pin goes.
    dep = await createLocalDeployment({
      dir,
      federation: 'byhand',
      aggregators: 1,
      sites: 4,
      overrides: { crypto: { keys: 'shared' } },
    });
    const file = parseDocument(readFileSync(dep.configPath, 'utf8'));
    file.deleteIn(['crypto', 'keys']);
    file.deleteIn(['members', 'keyFingerprints', 'ckks']);
    writeFileSync(dep.configPath, file.toString());
  }, 60_000);
  afterAll(async () => {
    await dep?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every site deals, then every site collects: one epoch, owner-only key files, no pending secret left', async () => {
    const keys = dep.config.members!.keysDir;
    const deal = (site: string) =>
      cohort('keys', 'threshold', 'deal', '--config', dep.configPath, '--member', site);
    const collect = (site: string) =>
      cohort('keys', 'threshold', 'collect', '--config', dep.configPath, '--member', site);
    for (const site of dep.sites.slice(0, 3)) {
      const r = await deal(site);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/any 3 of the 4 key holders decrypt/);
      expect(r.stdout).toMatch(/\(4 files\)/);
      expect(r.stdout).toMatch(/public share: .*\.tpub \(fingerprint [0-9a-f]{16}\)/);
    }
    // site-4 has not dealt: collecting now fails and says what is missing.
    const early = await collect('site-1');
    expect(early.status).not.toBe(0);
    expect(early.stderr).toMatch(/site-4/);
    expect((await deal('site-4')).status).toBe(0);
    const ids = new Set<string>();
    for (const site of dep.sites) {
      const r = await collect(site);
      expect(r.status, r.stderr).toBe(0);
      ids.add(/epoch id: ([0-9a-f]{64})/.exec(r.stdout)![1]!);
      expect(statSync(join(keys, site, `${site}.threshold`)).mode & 0o777).toBe(0o600);
      expect(existsSync(join(keys, site, `${site}.tsecret`))).toBe(false);
    }
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    const tc = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
    const registry = RegistryView.fromRegistry(loadPinnedRegistry(dep.config)!.registry);
    const epoch = loadThresholdEpoch({ dir: keys, federation: 'byhand', ctx: tc, registry, pin: id! });
    expect(epoch.roster.threshold).toBe(3);
    expect(epoch.roster.sites.map((s) => s.point)).toEqual([1, 2, 3, 4]);
    expect(() =>
      loadThresholdEpoch({ dir: keys, federation: 'byhand', ctx: tc, registry, pin: '0'.repeat(64) }),
    ).toThrow(/not the one the configuration pins/);
    // Only a site's own folder holds its key file.
    for (const site of dep.sites) {
      for (const other of dep.sites.filter((s) => s !== site)) {
        expect(readdirSync(join(keys, other))).not.toContain(`${site}.threshold`);
      }
    }
  }, 120_000);

  it('refuses a configuration with crypto.keys: shared, and a member that is not a site', async () => {
    const shared = await cohort(
      'keys',
      'threshold',
      'deal',
      '--config',
      dep.configPath,
      '--member',
      'site-1',
      '--set',
      'crypto.keys=shared',
    );
    expect(shared.status).not.toBe(0);
    expect(shared.stderr).toMatch(/crypto.keys: shared, not threshold/);
    const agg = await cohort('keys', 'threshold', 'deal', '--config', dep.configPath, '--member', 'agg-1');
    expect(agg.status).not.toBe(0);
    expect(agg.stderr).toMatch(/not one of the configuration's sites/);
  });
});
