import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  checkSiteConfig,
  dataContractSchema,
  loadSiteConfig,
  parseSiteConfig,
} from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-site-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function refused(fn: () => unknown): { code: string; lines: string[] } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as ConfigError;
    return { code: e.code, lines: e.message.split('\n') };
  }
  throw new Error('expected a ConfigError');
}

const tabular = dataContractSchema.parse({
  kind: 'tabular',
  features: [{ name: 'radius_mean' }, { name: 'texture_mean' }],
  label: { name: 'diagnosis', classes: ['B', 'M'] },
});

describe('loadSiteConfig', () => {
  it('reads a site configuration, filling defaults and resolving paths against its folder', () => {
    const path = file(
      'hospital/site.yaml',
      [
        'data:',
        '  csv: { path: data/a.csv, columns: { radius_mean: "Radius (mean)" }, label: Diagnosis }',
        'validation: { fraction: 0.2 }',
        'trainer:',
        '  command: ["/usr/bin/python3", "train.py", "--csv", "a.csv"]',
        '',
      ].join('\n'),
    );
    const site = loadSiteConfig(path, { env: {} });
    expect(site.file).toBe(path);
    expect(site.data.csv).toEqual({
      path: join(dir, 'hospital', 'data', 'a.csv'),
      columns: { radius_mean: 'Radius (mean)' },
      label: 'Diagnosis',
    });
    expect(site.validation).toEqual({ fraction: 0.2, seed: 1 });
    expect(site.trainer).toEqual({
      command: ['/usr/bin/python3', 'train.py', '--csv', 'a.csv'],
      timeoutMs: 600_000,
    });
    expect(Object.isFrozen(site.data.csv)).toBe(true);
  });

  it('keeps absolute paths, and resolves IDX and .npy pairs too', () => {
    const idx = loadSiteConfig(file('idx.yaml', 'data:\n  idx: { images: /abs/images.gz, labels: l.gz }\n'), {
      env: {},
    });
    expect(idx.data.idx).toEqual({ images: '/abs/images.gz', labels: join(dir, 'l.gz') });
    const npy = loadSiteConfig(file('npy.yaml', 'data:\n  npy: { features: x.npy, labels: y.npy }\n'), {
      env: {},
    });
    expect(npy.data.npy).toEqual({ features: join(dir, 'x.npy'), labels: join(dir, 'y.npy') });
    expect(npy.validation).toBeUndefined();
  });

  it('reports every issue with its path, like the federation configuration', () => {
    const path = file(
      'bad.yaml',
      'data:\n  csv: { path: a.csv }\n  npy: { features: x.npy, labels: y.npy }\nvalidaton: { fraction: 0.2 }\n',
    );
    const { code, lines } = refused(() => loadSiteConfig(path, { env: {} }));
    expect(code).toBe('CONFIG_INVALID');
    expect(lines).toEqual([
      `invalid configuration in ${path} (2 issues):`,
      '  data.npy: give one of csv, idx or npy, not csv and npy',
      "  validaton: unknown key (did you mean 'validation'?)",
    ]);
    expect(refused(() => loadSiteConfig(file('none.yaml', 'data: {}\n'), { env: {} })).lines[1]).toBe(
      '  data: give the data files: one of csv, idx or npy',
    );
    expect(
      refused(() =>
        loadSiteConfig(
          file('frac.yaml', 'data: { npy: { features: x, labels: y } }\nvalidation: { fraction: 1 }\n'),
          { env: {} },
        ),
      ).lines[1],
    ).toBe('  validation.fraction: must be < 1');
    expect(refused(() => loadSiteConfig(file('yaml.yaml', 'data: [\n'), { env: {} })).lines[1]).toMatch(
      /^ {2}\(root\): YAML syntax error at line \d+, column \d+/,
    );
    expect(refused(() => loadSiteConfig(join(dir, 'absent.yaml'), { env: {} })).code).toBe(
      'CONFIG_UNREADABLE',
    );
  });

  it('takes COHORT_SITE__ environment overrides and flag overrides', () => {
    const path = file('env.yaml', 'data:\n  csv: { path: a.csv }\n');
    const site = loadSiteConfig(path, {
      env: { COHORT_SITE__DATA__CSV__LABEL: 'Dx', COHORT__DATA__CSV__PATH: 'ignored.csv' },
      overrides: { 'validation.fraction': '0.25' },
    });
    expect(site.data.csv?.label).toBe('Dx');
    expect(site.data.csv?.path).toBe(join(dir, 'a.csv'));
    expect(site.validation).toEqual({ fraction: 0.25, seed: 1 });
  });
});

describe('parseSiteConfig', () => {
  it('validates a configuration built in code, keeping relative paths, and accepts a loaded one again', () => {
    const built = parseSiteConfig({ data: { csv: { path: 'rel/a.csv' } } });
    expect(built.data.csv).toEqual({ path: 'rel/a.csv', columns: {} });
    expect(built.file).toBeUndefined();
    const loaded = loadSiteConfig(file('again.yaml', 'data:\n  csv: { path: a.csv }\n'), { env: {} });
    expect(parseSiteConfig(loaded)).toEqual(loaded);
    expect(refused(() => parseSiteConfig({ data: { csv: { path: '' } } })).lines[1]).toBe(
      '  data.csv.path: must be at least 1 character long',
    );
  });
});

describe('checkSiteConfig against the data contract', () => {
  it('accepts a mapping of contract features to other column names', () => {
    expect(() =>
      checkSiteConfig(
        parseSiteConfig({ data: { csv: { path: 'a.csv', columns: { radius_mean: 'R' } } } }),
        tabular,
      ),
    ).not.toThrow();
  });

  it('refuses unknown features, shared columns and CSV for an image contract', () => {
    const site = parseSiteConfig(
      {
        data: {
          csv: {
            path: 'a.csv',
            columns: { radius_man: 'R', texture_mean: 'radius_mean', radius_mean: 'Dx' },
            label: 'Dx',
          },
        },
      },
      { file: join(dir, 'site.yaml') },
    );
    const { lines } = refused(() => checkSiteConfig(site, tabular));
    expect(lines).toEqual([
      `invalid configuration in ${join(dir, 'site.yaml')} (2 issues):`,
      "  data.csv.columns.radius_man: not a feature of the data contract (did you mean 'radius_mean'?)",
      '  data.csv.columns.radius_mean: feature radius_mean would read column "Dx", which is the label column',
    ]);
    const shared = parseSiteConfig({
      data: { csv: { path: 'a.csv', columns: { texture_mean: 'radius_mean' } } },
    });
    expect(refused(() => checkSiteConfig(shared, tabular)).lines[1]).toBe(
      '  data.csv.columns.texture_mean: feature texture_mean would read column "radius_mean", which is the column of feature radius_mean',
    );
    const image = dataContractSchema.parse({
      kind: 'image',
      image: { height: 28, width: 28 },
      label: { classes: [0, 1] },
    });
    expect(refused(() => checkSiteConfig(shared, image)).lines[1]).toBe(
      "  data.csv: the federation's data contract is of kind 'image': give idx or npy files",
    );
  });
});
