import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readIdx, readNpy } from '../../src/data/index.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-data-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const split = (out: string, ...extra: string[]) =>
  cohort('data', 'split', '--sites', '3', '--train-limit', '600', '--out', join(dir, out), ...extra);

describe('cohort data split / check', () => {
  it('splits MNIST into site folders (gzip IDX) that check clean', async () => {
    const r = await split('idx', '--seed', '5');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/test: 10000 rows/);
    let total = 0;
    for (let i = 0; i < 3; i++) {
      const labels = join(dir, 'idx', `site-${i}`, 'train-labels-idx1-ubyte.gz');
      expect(statSync(labels).mode & 0o777).toBe(0o644);
      total += readIdx(labels).dims[0]!;
    }
    expect(total).toBe(600);
    const sites = [0, 1, 2].map((i) => join(dir, 'idx', `site-${i}`));
    const c = await cohort(
      'data',
      'check',
      ...sites,
      join(dir, 'idx', 'test'),
      '--classes',
      '10',
      '--image-shape',
      '28x28',
    );
    expect(c.stderr).toBe('');
    expect(c.status).toBe(0);
    expect(c.stdout.trim().split('\n')).toHaveLength(8);
    expect(c.stdout).toMatch(
      /site-0\/train-images-idx3-ubyte\.gz: idx-images, \d+ rows, shape \[\d+, 28, 28\]/,
    );
    expect(c.stdout).toMatch(
      /site-0\/train-labels-idx1-ubyte\.gz: idx-labels, \d+ rows, shape \[\d+\], labels 0:\d+ 1:\d+/,
    );
  });

  it('is deterministic for a seed, and refuses to overwrite without --force', async () => {
    await split('a', '--seed', '9', '--partition', 'dirichlet', '--alpha', '0.3', '--format', 'npy');
    const again = await split(
      'a',
      '--seed',
      '9',
      '--partition',
      'dirichlet',
      '--alpha',
      '0.3',
      '--format',
      'npy',
    );
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/error \[DATA_FILE_EXISTS\]: .*site-0.*pass --force/);
    await split('b', '--seed', '9', '--partition', 'dirichlet', '--alpha', '0.3', '--format', 'npy');
    for (const f of ['site-2/features.npy', 'site-2/labels.npy']) {
      expect(readFileSync(join(dir, 'a', f)).equals(readFileSync(join(dir, 'b', f)))).toBe(true);
    }
    expect(readNpy(join(dir, 'a', 'test', 'labels.npy')).shape).toEqual([10000]);
    const forced = await split(
      'a',
      '--seed',
      '9',
      '--partition',
      'dirichlet',
      '--alpha',
      '0.3',
      '--format',
      'npy',
      '--force',
    );
    expect(forced.status).toBe(0);
  });

  it('refuses bad flags', async () => {
    expect((await split('x', '--partition', 'dirichlet')).stderr).toMatch(/--alpha/);
    expect((await split('x', '--format', 'csv')).status).toBe(2);
    expect((await cohort('data', 'split', '--sites', '0', '--out', join(dir, 'x'))).stderr).toMatch(
      /--sites 0/,
    );
  });

  it('check exits 2 naming file, line and field of the first bad file', async () => {
    const csv = join(dir, 'site.csv');
    writeFileSync(csv, 'x1,x2,label\n1,2,0\n3,oops,1\n');
    const r = await cohort('data', 'check', csv, '--label', 'label');
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`error [DATA_FORMAT]: ${csv} line 3, field "x2": "oops" is not a number\n`);
    const missing = await cohort('data', 'check', csv, '--label', 'y');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('field "y"');
    const range = await cohort('data', 'check', join(dir, 'idx', 'site-0'), '--classes', '3');
    expect(range.status).toBe(2);
    expect(range.stderr).toMatch(/DATA_LABEL_RANGE.*train-labels-idx1-ubyte\.gz, field "label\[\d+\]"/);
    expect(range.stdout).toMatch(/idx-images/);
  });
});
