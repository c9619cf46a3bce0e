// Worker threads train a round's sites side by side: the results must be those of one engine
// training them one after another.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadExperiment, type RoundMetrics, runSimulation } from '../../src/simulate/index.ts';
import { writeDataByPath } from '../fixtures/experiments/write-data-by-path.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-train-pool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('simulation with training.workers', () => {
  it('gives the metrics of a single engine (a CNN from configuration, 2 rounds)', async () => {
    const run = loadExperiment(writeDataByPath(dir), { env: {} }).runs.find((r) => r.name === 'idx-cnn')!;
    const collect = async (workers: number) => {
      const rounds: RoundMetrics[] = [];
      const summary = await runSimulation(
        { ...run, training: { ...run.training, workers } },
        { onRound: (m) => rounds.push(m) },
      );
      return { rounds, summary };
    };
    const one = await collect(1);
    const two = await collect(2);
    expect(two.rounds.map((m) => [m.round, m.trainLoss, m.accuracy, m.bytesUp])).toEqual(
      one.rounds.map((m) => [m.round, m.trainLoss, m.accuracy, m.bytesUp]),
    );
    for (const [i, m] of two.rounds.entries()) expect(m.testLoss!).toBeCloseTo(one.rounds[i]!.testLoss!, 9);
    expect(two.summary.finalAccuracy).toBe(one.summary.finalAccuracy);
  });

  it('needs the CPU engine', async () => {
    const run = loadExperiment(writeDataByPath(dir), { env: {} }).runs.find((r) => r.name === 'idx-cnn')!;
    await expect(
      runSimulation({ ...run, training: { ...run.training, engine: 'webgpu', workers: 2 } }),
    ).rejects.toThrow('training.workers 2 needs training.engine cpu');
  });
});
