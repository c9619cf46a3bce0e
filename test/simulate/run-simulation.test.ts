import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../crypto/digest/index.ts';
import { ConfigError, InvalidArgumentError } from '../../src/errors/index.ts';
import {
  type Experiment,
  heChannel,
  loadExperiment,
  quantizedChannel,
  type RoundMetrics,
  type RunConfig,
  runExperiment,
  runSimulation,
  sampleSites,
} from '../../src/simulate/index.ts';
import { bytesToHex } from '../../src/versions/index.ts';
import { randomUpdate } from '../helpers/codec-fixture.ts';
import { cohort } from '../helpers/run-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-sim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sink = { write: () => true };

async function metricsOf(run: RunConfig): Promise<{ rounds: RoundMetrics[]; final: number }> {
  const rounds: RoundMetrics[] = [];
  const summary = await runSimulation(run, { onRound: (m) => rounds.push(m) });
  return { rounds, final: summary.finalAccuracy };
}

describe('simulation: short MNIST 2NN (config/experiments/mnist-2nn-short.yaml)', () => {
  let experiment: Experiment;
  const results = new Map<string, { rounds: RoundMetrics[]; final: number }>();
  beforeAll(async () => {
    experiment = loadExperiment('config/experiments/mnist-2nn-short.yaml', { env: {} });
    for (const run of experiment.runs) results.set(run.name, await metricsOf(run));
  }, 300_000); // four 5-round runs: ≈ 20 s on an idle core, several times that on a shared one

  it('float32 FedAvg learns: accuracy floor after 5 rounds', () => {
    expect(results.get('float32')!.final).toBeGreaterThanOrEqual(0.84);
  });

  it('8-bit error feedback stays within 0.5 points of float32; 1-bit keeps learning', () => {
    const f = results.get('float32')!.final;
    expect(Math.abs(results.get('ef-8bit')!.final - f)).toBeLessThanOrEqual(0.005);
    expect(results.get('ef-1bit')!.final).toBeGreaterThanOrEqual(0.78);
  });

  it('the real CKKS codec gives the same metrics as the quantizer in the clear, at 4–6 bytes a parameter', () => {
    const he = results.get('he-8bit')!.rounds;
    const q = results.get('ef-8bit')!.rounds;
    const f = results.get('float32')!.rounds;
    // Equal metrics every round (the bit-identity of the aggregates is the next test).
    expect(he.map((r) => [r.trainLoss, r.testLoss, r.accuracy])).toEqual(
      q.map((r) => [r.trainLoss, r.testLoss, r.accuracy]),
    );
    // Bytes a site sends per parameter: float32 4, packed 8-bit levels 1, and the ciphertexts more
    // than float32 (CKKS expansion) within the codec's goal of 6 (test/protocol/codec.test.ts).
    const params = 199_210; // the 2NN
    for (const [rounds, perParam] of [
      [f, 4],
      [q, 1],
    ] as const) {
      for (const r of rounds) expect(r.bytesUp).toBe(r.sites * params * perParam);
    }
    for (const r of he) {
      expect(r.bytesUp / (r.sites * params)).toBeGreaterThan(4);
      expect(r.bytesUp / (r.sites * params)).toBeLessThanOrEqual(6);
    }
  });

  it('the real CKKS codec gives bit-identical aggregates to the quantizer in the clear, round after round', async () => {
    // The model a round makes is strategy(global, mean): bit-identical means make bit-identical
    // models. Four sites, three rounds (error feedback carries residuals across them), a length of
    // several ciphertexts with a partial last one, and a clip that changes every round.
    const length = 40_000;
    const he = await heChannel(8, 3, 32, 'sim-bits');
    const plain = quantizedChannel(8, 3);
    try {
      for (const [round, clip] of [
        [1, 0.02],
        [2, 0.013],
        [3, 0.031],
      ] as const) {
        const contributions = [0, 1, 2, 3].map((site) => ({
          site,
          update: randomUpdate(length, 100 * round + site + 1, 0.03),
        }));
        const a = await he.aggregate(round, clip, contributions);
        const b = await plain.aggregate(round, clip, contributions);
        expect(a.mean.length).toBe(length);
        expect(bytesToHex(sha256(new Uint8Array(a.mean.buffer))), `round ${round}`).toBe(
          bytesToHex(sha256(new Uint8Array(b.mean.buffer))),
        );
      }
    } finally {
      he.dispose();
      plain.dispose();
    }
  });

  it('stopAtTarget ends the run at the first round that reaches the target', async () => {
    const full = results.get('float32')!.rounds;
    expect(full.length).toBeGreaterThanOrEqual(3);
    // A target the full run first reaches before its last round.
    const target = full[1]!.accuracy!;
    const first = full.findIndex((r) => r.accuracy! >= target) + 1;
    expect(first).toBeLessThan(full.length);
    const rounds: RoundMetrics[] = [];
    const summary = await runSimulation(
      { ...experiment.runs[0]!, targetAccuracy: target, stopAtTarget: true },
      { onRound: (m) => rounds.push(m) },
    );
    expect(summary.roundsToTarget).toBe(first);
    expect(summary.rounds).toBe(first);
    expect(rounds.map((r) => r.accuracy)).toEqual(full.slice(0, first).map((r) => r.accuracy));
  });

  it('is deterministic: the same run twice gives the same metrics', async () => {
    const again = await metricsOf({ ...experiment.runs[0]!, rounds: 2 });
    expect(again.rounds.map((r) => r.accuracy)).toEqual(
      results
        .get('float32')!
        .rounds.slice(0, 2)
        .map((r) => r.accuracy),
    );
  });
});

describe('simulation on the WebGPU engine (lavapipe in CI)', () => {
  it('trains the tabular medical set like the CPU engine does', async () => {
    const experiment = loadExperiment('config/experiments/wdbc.yaml', { env: {} });
    const base = { ...experiment.runs[0]!, rounds: 4 };
    const cpu = await runSimulation(base);
    const gpu = await runSimulation({
      ...base,
      training: { ...base.training, engine: 'webgpu', allowSoftwareGpu: true },
    });
    expect(gpu.engine).toMatch(/^webgpu:/);
    expect(cpu.finalAccuracy).toBeGreaterThanOrEqual(0.9);
    expect(Math.abs(gpu.finalAccuracy - cpu.finalAccuracy)).toBeLessThanOrEqual(0.02);
  });
});

describe('experiment files and outputs', () => {
  it('writes JSONL metrics, a summary and an SVG plot', async () => {
    const experiment = loadExperiment('config/experiments/wdbc.yaml', { env: {} });
    const out = await runExperiment(
      { ...experiment, outputDir: dir, runs: experiment.runs.slice(0, 1).map((r) => ({ ...r, rounds: 3 })) },
      { stdout: sink, stderr: sink, tty: false },
    );
    const lines = readFileSync(out.metrics, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[2]!)).toMatchObject({ run: 'logreg-fedavg', round: 3 });
    expect(readFileSync(out.plot, 'utf8')).toMatch(/<svg[\s\S]*<polyline[\s\S]*logreg-fedavg/);
    expect(JSON.parse(readFileSync(out.summaryJson, 'utf8')).runs[0].rounds).toBe(3);
  });

  it('names the bad field of a run, the run and the file', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(
      path,
      'experiment: bad\nbase:\n  rounds: 3\n  data: { kind: mnist }\nruns:\n  - name: a\n    training: { batchSize: 0 }\n',
    );
    let caught: unknown;
    try {
      loadExperiment(path, { env: {} });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toContain('runs[0] (a)');
    expect((caught as Error).message).toContain('training.batchSize');
  });

  it('refuses a model that does not fit the data, naming both sizes', async () => {
    const experiment = loadExperiment('config/experiments/wdbc.yaml', { env: {} });
    const run = { ...experiment.runs[0]!, model: { ...experiment.runs[0]!.model, kind: '2nn' as const } };
    await expect(runSimulation(run)).rejects.toThrow(InvalidArgumentError);
    await expect(runSimulation(run)).rejects.toThrow(/784 features and 10 classes, data has 30 and 2/);
  });

  it('the CLI names unknown runs', async () => {
    const r = await cohort('simulate', '--config', 'config/experiments/wdbc.yaml', '--runs', 'nope');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--runs names nope');
  });

  it('samples m = round(C·K) distinct sites, reproducibly', () => {
    const a = sampleSites(100, 0.1, 1, 5);
    expect(a).toHaveLength(10);
    expect(new Set(a).size).toBe(10);
    expect(sampleSites(100, 0.1, 1, 5)).toEqual(a);
    expect(sampleSites(100, 0.1, 1, 6)).not.toEqual(a);
  });
});
