import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParameters, mlp } from '../../federation/index.ts';
import { featureTotals, standardizerFromTotals } from '../../src/protocol/index.ts';
import {
  createExternalTrainer,
  type ExternalTrainer,
  type Standardization,
  type TrainSettings,
} from '../../src/trainer/index.ts';
import { rng } from '../helpers/rng.ts';
import {
  PYTORCH_EXAMPLES,
  SYSTEM_PYTHON,
  smallCnn,
  tempFolder,
  torchUnavailable,
  writeImageNpy,
  writeSiteCsv,
} from './trainer-fixtures.ts';

// The PyTorch example trainer (examples/pytorch/cohort_trainer.py) driven through the protocol by
// real processes. Needs /usr/bin/python3 with torch (Debian's python3-torch; CI installs it).

const NO_TORCH = torchUnavailable();
const TITLE = 'external trainer: examples/pytorch through /usr/bin/python3';
const SPEC = mlp(4, [8], 3);

function settings(round: number, overrides: Partial<TrainSettings> = {}): TrainSettings {
  return {
    round,
    learningRate: 0.3,
    batchSize: 16,
    epochs: 2,
    proximalMu: 0,
    shuffleSeed: 1000 + round,
    deadlineUnixMs: Date.now() + 3_600_000,
    ...overrides,
  };
}

const maxAbsDiff = (a: Float32Array, b: Float32Array): number =>
  a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i]!)), 0);

/** The example trainer on `csv` (label column `label`), with `extra` data flags. */
function torchTrainer(csv: string, workDir: string, extra: readonly string[]): ExternalTrainer {
  return createExternalTrainer({
    command: [
      SYSTEM_PYTHON,
      join(PYTORCH_EXAMPLES, 'cohort_trainer.py'),
      '--csv',
      csv,
      '--label-column',
      'label',
      ...extra,
      '--threads',
      '1',
    ],
    workDir,
    timeoutMs: 120_000,
  });
}

/**
 * A CSV whose features probe the fixed point: f0 ordinary values, f1 exact halves of a unit
 * (±(2k + 1)/8192: q ties, which round toward +∞), f2 values up to 10^6 (squares past 2^53), f3
 * values near 10^9 (q past 2^31); labels 0 … 2.
 */
function writeStatisticsCsv(path: string, rows: number, seed: number): void {
  const next = rng(seed);
  const sign = () => (next() < 0.5 ? -1 : 1);
  const lines = ['f0,f1,f2,f3,label'];
  for (let r = 0; r < rows; r++) {
    const x = [
      (next() * 2 - 1).toFixed(5),
      String((sign() * (2 * Math.floor(next() * 50) + 1)) / 8192),
      (sign() * next() * 1e6).toFixed(3),
      (sign() * (1e9 + next() * 1e6)).toFixed(1),
    ];
    lines.push(`${x.join(',')},${r % 3}`);
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** The feature rows of a CSV written above, as the agent's engine would hold them (float32). */
function csvDataset(path: string) {
  const lines = readFileSync(path, 'utf8').trim().split('\n').slice(1);
  const featureCount = 4;
  const features = new Float32Array(lines.length * featureCount);
  lines.forEach((line, r) => {
    line
      .split(',')
      .slice(0, featureCount)
      .forEach((cell, j) => {
        features[r * featureCount + j] = Number(cell);
      });
  });
  const labels = Uint8Array.from(lines, (line) => Number(line.split(',')[featureCount]));
  return { features, labels, count: lines.length, featureCount, classCount: 3 };
}

describe.skipIf(NO_TORCH !== undefined)(
  NO_TORCH === undefined ? TITLE : `${TITLE} — SKIPPED: ${NO_TORCH}`,
  () => {
    let root: string;
    let workDir: string;
    let trainer: ExternalTrainer;

    beforeAll(() => {
      root = tempFolder('trainer-torch');
      workDir = join(root, 'work');
      const csv = join(root, 'site.csv');
      writeSiteCsv(csv, 120, 11);
      trainer = torchTrainer(csv, workDir, ['--validation-fraction', '0.25', '--seed', '5']);
    });

    afterAll(() => {
      if (root !== undefined) rmSync(root, { recursive: true, force: true });
    });

    it('describes the site: training rows, validation rows, classes', async () => {
      const described = await trainer.describe();
      expect(described).toEqual({ examples: 90, validationExamples: 30, classes: 3, features: 4 });
      expect(trainer.description).toEqual(described);
    });

    it('trains and evaluates through the protocol: weights change, loss falls over rounds', async () => {
      let global = initParameters(SPEC, 3);
      const before = await trainer.evaluate(SPEC, global);
      expect(before.examples).toBe(30);
      expect(before.confusion).toHaveLength(3);
      expect(before.confusion.flat().reduce((a, b) => a + b, 0)).toBe(30);

      const losses: number[] = [];
      for (let round = 1; round <= 3; round++) {
        const result = await trainer.train(SPEC, global, settings(round));
        expect(result.examples).toBe(90);
        expect(result.steps).toBe(2 * Math.ceil(90 / 16));
        expect(result.parameters).toHaveLength(global.length);
        expect(result.parameters.every(Number.isFinite)).toBe(true);
        expect(maxAbsDiff(result.parameters, global)).toBeGreaterThan(1e-4);
        losses.push(result.meanLoss);
        global = result.parameters;
      }
      expect(losses[2]!).toBeLessThan(losses[0]!);

      const after = await trainer.evaluate(SPEC, global);
      expect(after.examples).toBe(30);
      expect(after.lossSum).toBeLessThan(before.lossSum);
      expect(after.correct).toBe(after.confusion.reduce((sum, row, t) => sum + row[t]!, 0));
      expect(readdirSync(workDir)).toEqual([]);
    });

    it('is deterministic in the shuffle seed, and the proximal term pulls toward the global model', async () => {
      const initial = initParameters(SPEC, 4);
      const a = await trainer.train(SPEC, initial, settings(7));
      const b = await trainer.train(SPEC, initial, settings(7));
      expect(b.parameters).toEqual(a.parameters);
      const prox = await trainer.train(SPEC, initial, settings(7, { proximalMu: 5 }));
      const drift = (p: Float32Array) => Math.hypot(...p.map((v, i) => v - initial[i]!));
      expect(drift(prox.parameters)).toBeLessThan(drift(a.parameters));
    });

    it('sums its training rows exactly as featureTotals does in TypeScript', async () => {
      // With no validation rows the training rows are every CSV row (in a permuted order, which
      // exact integer sums do not see).
      const csv = join(root, 'statistics.csv');
      writeStatisticsCsv(csv, 120, 17);
      const whole = torchTrainer(csv, join(root, 'statistics-work'), ['--validation-fraction', '0']);
      const totals = await whole.statistics();
      expect(whole.description).toEqual({ examples: 120, validationExamples: 0, classes: 3, features: 4 });
      expect(totals).toEqual(featureTotals(csvDataset(csv)));
      // The sums are past what a double holds exactly: decimal strings carried them whole.
      expect(totals.squares[3]! > 2n ** 64n).toBe(true);
    });

    it('trains and evaluates on rows standardized with the federated statistics', async () => {
      const totals = await trainer.statistics();
      expect(totals.rows).toBe(90n);
      const standardizer = standardizerFromTotals(totals);
      const standardization: Standardization = {
        mean: Array.from(standardizer.mean),
        std: Array.from(standardizer.std),
      };
      const initial = initParameters(SPEC, 6);
      const plain = await trainer.train(SPEC, initial, settings(8));
      const standardized = await trainer.train(SPEC, initial, settings(8, { standardization }));
      expect(standardized.examples).toBe(90);
      expect(Number.isFinite(standardized.meanLoss)).toBe(true);
      expect(standardized.parameters.every(Number.isFinite)).toBe(true);
      expect(maxAbsDiff(standardized.parameters, plain.parameters)).toBeGreaterThan(1e-4);

      const raw = await trainer.evaluate(SPEC, standardized.parameters);
      const evaluation = await trainer.evaluate(SPEC, standardized.parameters, undefined, standardization);
      expect(evaluation.examples).toBe(30);
      expect(evaluation.confusion.flat().reduce((a, b) => a + b, 0)).toBe(30);
      expect(Number.isFinite(evaluation.lossSum)).toBe(true);
      expect(evaluation.lossSum).not.toBe(raw.lossSum);
      expect(readdirSync(workDir)).toEqual([]);
    });

    it.skipIf(smallCnn() === undefined)(
      'trains a CNN (conv2d, max-pool, dense with implicit flatten) on .npy images',
      async () => {
        const spec = smallCnn()!;
        const dir = join(root, 'images');
        const { features, labels } = writeImageNpy(dir, 60, 21);
        const cnn = createExternalTrainer({
          command: [
            SYSTEM_PYTHON,
            join(PYTORCH_EXAMPLES, 'cohort_trainer.py'),
            '--npy-features',
            features,
            '--npy-labels',
            labels,
            '--validation-fraction',
            '0.2',
            '--threads',
            '1',
          ],
          workDir: join(dir, 'work'),
          timeoutMs: 120_000,
        });
        const initial = initParameters(spec, 5);
        const result = await cnn.train(
          spec,
          initial,
          settings(1, { learningRate: 0.1, batchSize: 8, epochs: 3 }),
        );
        expect(cnn.description).toEqual({ examples: 48, validationExamples: 12, classes: 3, features: 36 });
        expect(result.examples).toBe(48);
        expect(maxAbsDiff(result.parameters, initial)).toBeGreaterThan(1e-4);
        const evaluation = await cnn.evaluate(spec, result.parameters);
        expect(evaluation.confusion.flat().reduce((a, b) => a + b, 0)).toBe(12);
      },
    );
  },
);
