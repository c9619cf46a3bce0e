import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, InvalidArgumentError } from '../../src/errors/index.ts';
import { loadExperiment, runExperiment, runSimulation } from '../../src/simulate/index.ts';
import { writeDataByPath } from '../fixtures/experiments/write-data-by-path.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-sim-path-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sink = { write: () => true };

describe('simulation on data by path (CSV, gzipped IDX, .npy)', () => {
  const file = writeDataByPath(dir);

  it('resolves idx and npy paths against the experiment file', () => {
    const e = loadExperiment(file, { env: {} });
    const idx = e.runs.find((r) => r.name === 'idx-gz')!.data;
    expect(idx.kind === 'idx' && idx.train.images).toBe(join(dir, 'train-images-idx3-ubyte.gz'));
    const npy = e.runs.find((r) => r.name === 'npy')!.data;
    expect(npy.kind === 'npy' && npy.features).toBe(join(dir, 'features.npy'));
    const csv = e.runs.find((r) => r.name === 'csv')!.data;
    expect(csv.kind === 'csv' && csv.path).toBe('data/wdbc/wdbc.csv');
  });

  it('runs 2 rounds on each source and reports an accuracy', async () => {
    const e = loadExperiment(file, { env: {} });
    // The CNN runs of the same file are the CLI test's (test/cli/simulate-data.test.ts).
    const sources = ['csv', 'idx-gz', 'npy'];
    const out = await runExperiment(
      { ...e, outputDir: join(dir, 'results') },
      { stdout: sink, stderr: sink, tty: false },
      (r) => sources.includes(r.name),
    );
    expect(out.summaries.map((s) => s.run)).toEqual(sources);
    for (const s of out.summaries) {
      expect(s.rounds).toBe(2);
      expect(s.finalAccuracy).toBeGreaterThanOrEqual(0.85);
    }
    const lines = readFileSync(out.metrics, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(6);
  });

  it('a missing data file stops the load, naming the run and the field', () => {
    const bad = join(dir, 'missing.yaml');
    writeFileSync(bad, readFileSync(file, 'utf8').replace('t10k-labels-idx1-ubyte.gz', 'no-such-labels.gz'));
    let error: unknown;
    try {
      loadExperiment(bad, { env: {} });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      `${bad} runs[1] (idx-gz): data.test.labels: no such file ${join(dir, 'no-such-labels.gz')}`,
    );
    expect((error as ConfigError).details).toMatchObject({ path: 'data.test.labels' });
  });

  it('schema errors name the field; a site column needs CSV data', async () => {
    const bad = join(dir, 'bad-schema.yaml');
    writeFileSync(bad, readFileSync(file, 'utf8').replace('classCount: 3 }', 'classCount: 1 }'));
    expect(() => loadExperiment(bad, { env: {} })).toThrow(/runs\[2\] \(npy\)[\s\S]*data\.classCount/);
    const npy = loadExperiment(file, { env: {} }).runs[2]!;
    await expect(runSimulation({ ...npy, partition: { ...npy.partition, kind: 'column' } })).rejects.toThrow(
      InvalidArgumentError,
    );
  });
});
