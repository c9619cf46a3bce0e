// The experiment tables of docs/results.md are this function's output over tracked metrics files.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadExperiment, readRoundMetrics, resultsTable } from '../../src/simulate/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-results-table-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const runs = loadExperiment('config/experiments/mnist-cnn-iid.yaml', { env: {} }).runs.map((r) => {
  const { reference: _ignored, ...rest } = r;
  return rest;
});

/** One run's metrics: the given accuracies from round 1, 10 MB up per round. */
function metrics(run: string, accuracies: number[]): string {
  return accuracies
    .map((accuracy, i) =>
      JSON.stringify({
        run,
        round: i + 1,
        trainLoss: 0.1,
        testLoss: 0.05,
        accuracy,
        bytesUp: 10e6,
        clip: null,
        sites: 10,
        seconds: 1,
      }),
    )
    .join('\n');
}

describe('resultsTable', () => {
  it('rounds to the target, accuracy at the first run’s round, best, bytes up to the target (hand-computed)', () => {
    const a = join(dir, 'a.jsonl');
    const b = join(dir, 'b.jsonl');
    writeFileSync(a, `${metrics('float32', [0.9, 0.985, 0.991, 0.992])}\n`);
    // Another process's file, rounds out of order: the table sorts them.
    writeFileSync(b, `${metrics('ef-8bit', [0.9, 0.98, 0.989, 0.993]).split('\n').reverse().join('\n')}\n`);
    expect(resultsTable(runs, readRoundMetrics([a, b]))).toBe(
      [
        '| run     | updates                | rounds to 99% | accuracy at round 3 | best   | rounds run | bytes up to target |',
        '| ------- | ---------------------- | ------------- | ------------------- | ------ | ---------- | ------------------ |',
        '| float32 | exact FedAvg (float32) | 3             | 99.10%              | 99.20% | 4          | 30 MB              |',
        '| ef-8bit | error feedback, 8-bit  | 4             | 98.90%              | 99.30% | 4          | 40 MB              |',
      ].join('\n'),
    );
  });

  it('says how many rounds ran when the target was not reached, and refuses a file that is not metrics', () => {
    const c = join(dir, 'c.jsonl');
    writeFileSync(c, `${metrics('he-8bit', [0.5, 0.6])}\n`);
    expect(resultsTable(runs, readRoundMetrics([c])).split('\n')[2]).toBe(
      '| he-8bit | 8-bit through CKKS + signatures | not in 2      | —                   | 60.00% | 2          | 20 MB    |',
    );
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"run":"x","round":0}\n');
    expect(() => readRoundMetrics([bad])).toThrow(`${bad} line 1: not a round's metrics`);
  });

  it('ends with the published reference row when the first run names one', () => {
    const d = join(dir, 'd.jsonl');
    writeFileSync(d, `${metrics('float32', [0.98, 0.991])}\n`);
    const withRef = runs.map((r) => ({ ...r, reference: { source: 'paper, Table 2', roundsToTarget: 34 } }));
    expect(
      resultsTable(withRef, readRoundMetrics([d]))
        .split('\n')
        .at(-1),
    ).toBe(
      '| paper, Table 2 | as published           | 34            | —                   | —      | —          | —                  |',
    );
  });
});
