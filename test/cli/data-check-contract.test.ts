import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { wdbcPath } from '../../src/data/index.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-data-check-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

/** WDBC's 30 feature names, in its header's order. */
const NAMES = [
  'radius',
  'texture',
  'perimeter',
  'area',
  'smoothness',
  'compactness',
  'concavity',
  'concave_points',
  'symmetry',
  'fractal_dimension',
];
const FEATURES = ['mean', 'se', 'worst'].flatMap((s) => NAMES.map((f) => `${f}_${s}`));

const federation = write(
  'federation.yaml',
  [
    'federation: { id: contract-check }',
    'data:',
    '  kind: tabular',
    '  features:',
    ...FEATURES.map((f) => `    - { name: ${f} }`),
    '  label: { name: diagnosis, classes: [0, 1] }',
    '',
  ].join('\n'),
);

describe('cohort data check --config --site-config', () => {
  it('prints the rows of each split by class when the files fit the contract', async () => {
    const site = write(
      'site.yaml',
      `data:\n  csv: { path: ${wdbcPath()} }\nvalidation: { fraction: 0.2, seed: 3 }\n`,
    );
    const r = await cohort('data', 'check', '--config', federation, '--site-config', site);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      `${site}: fits the data contract of ${federation} (tabular, 30 features, 2 classes (0, 1))`,
      `files: ${wdbcPath()}`,
      'train: 455 rows, classes 0:170 1:285',
      'validation: 114 rows, classes 0:42 1:72',
    ]);
  });

  it('exits with the first violation, naming file, line and field', async () => {
    const csv = write('a.csv', 'radius_mean,diagnosis\n1,0\n');
    const site = write('missing.yaml', 'data:\n  csv: { path: a.csv }\n');
    const r = await cohort('data', 'check', '--config', federation, '--site-config', site);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `error [DATA_FORMAT]: ${csv} line 1: column "texture_mean" (contract feature 2) is missing; header has: radius_mean, diagnosis\n`,
    );
    const wrong = write('wrong.yaml', 'data:\n  csv: { path: a.csv, columns: { radius: r } }\n');
    const w = await cohort('data', 'check', '--config', federation, '--site-config', wrong);
    expect(w.status).toBe(2);
    expect(w.stderr).toMatch(
      /^error \[CONFIG_INVALID\]: .*wrong\.yaml[\s\S]*data\.csv\.columns\.radius: not a feature/,
    );
  });

  it('needs --config with --site-config, a contract in it, and no other data flags', async () => {
    const site = write('plain.yaml', 'data:\n  csv: { path: a.csv }\n');
    const alone = await cohort('data', 'check', '--site-config', site);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toMatch(/--site-config needs --config/);
    const bare = write('bare.yaml', 'federation: { id: bare }\n');
    const none = await cohort('data', 'check', '--config', bare, '--site-config', site);
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/CONFIG_INVALID.*has no data contract/);
    const extra = await cohort('data', 'check', 'x.csv', '--config', federation, '--site-config', site);
    expect(extra.stderr).toMatch(/drop data paths/);
    const nothing = await cohort('data', 'check');
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toMatch(/give the data files or folders to check/);
  });
});
