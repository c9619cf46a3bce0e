import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDataByPath } from '../fixtures/experiments/write-data-by-path.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-cli-sim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cohort simulate with data by path', () => {
  it('needs the experiment file once, by --config or --experiment', async () => {
    const r = await cohort('simulate');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/--config <file> \(or --experiment <file>\)/);
  });

  it('runs an experiment on gzipped IDX and .npy files next to it and prints accuracies', async () => {
    const file = writeDataByPath(dir);
    const out = join(dir, 'out');
    const r = await cohort(
      'simulate',
      '--config',
      file,
      '--runs',
      'idx-gz,npy',
      '--rounds',
      '1',
      '--out',
      out,
    );
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/idx-gz: .*final \d+\.\d\d% \(cpu/);
    expect(r.stdout).toMatch(/npy: .*final \d+\.\d\d% \(cpu/);
    expect(existsSync(join(out, 'data-by-path', 'summary.json'))).toBe(true);
  });

  it('trains a CNN from configuration on IDX images, in the clear and through the CKKS codec', async () => {
    const file = writeDataByPath(dir);
    const r = await cohort(
      'simulate',
      '--config',
      file,
      '--runs',
      'idx-cnn,idx-cnn-he',
      '--rounds',
      '2',
      '--out',
      join(dir, 'cnn'),
    );
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/idx-cnn: .*final \d+\.\d\d% \(cpu/);
    expect(r.stdout).toMatch(/idx-cnn-he: .*final \d+\.\d\d% \(cpu/);
  });

  it('runs the FedAvg paper’s MNIST CNN (1,663,370 parameters)', async () => {
    const r = await cohort(
      'simulate',
      '--config',
      'config/experiments/mnist-cnn-short.yaml',
      '--runs',
      'float32',
      '--rounds',
      '1',
      '--out',
      join(dir, 'fedavg-cnn'),
    );
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/float32: .*final \d+\.\d\d% \(cpu/);
  });

  it('names the file and field of a broken .npy file', async () => {
    const file = writeDataByPath(dir);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'labels.npy'), Uint8Array.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 9, 0, 0, 0]));
    const r = await cohort(
      'simulate',
      '--experiment',
      file,
      '--runs',
      'npy',
      '--rounds',
      '1',
      '--out',
      join(dir, 'o2'),
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(
      `${join(dir, 'labels.npy')}, field "version": format version 9.0 is not supported`,
    );
  });
});
