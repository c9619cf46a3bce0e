import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initParameters, MNIST_2NN, type ModelSpec, mlp, modelLayout } from '../../federation/index.ts';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Dataset, TrainConfig, TrainingEngine, TrainResult } from '../../gpu/index.ts';
import { createWebGpuEngine, GpuError } from '../../gpu/webgpu/index.ts';
import { rng } from '../helpers/rng.ts';
import { abortOnLook } from './abort-on-look.ts';
import { expectConfusion } from './webgpu-compare.ts';

/*
 * The WebGPU engine against the CPU reference engine (float64 sums) on the same mini-batches.
 * Tolerances: parameters after one step within 1e-6 absolute; after several epochs with momentum
 * and FedProx within 2e-5 absolute (float32 vs float64 rounding compounds over steps); mean loss
 * and evaluation loss relative 1e-5; evaluation accuracy identical. Fails (never skips) when no
 * adapter exists.
 */

let gpu: TrainingEngine;
const cpu = createCpuEngine();

beforeAll(async () => {
  gpu = await createWebGpuEngine({ allowSoftware: true });
});
afterAll(async () => {
  await gpu?.dispose();
});

/** A learnable toy problem: the label is the arg-max of a fixed random projection of the features. */
function dataset(spec: ModelSpec, count: number, seed: number): Dataset {
  const next = rng(seed);
  const { inputSize: featureCount, classes: classCount } = modelLayout(spec);
  const features = new Float32Array(count * featureCount);
  for (let i = 0; i < features.length; i++) features[i] = next() < 0.5 ? 0 : next();
  const projection = Float32Array.from({ length: classCount * featureCount }, () => next() * 2 - 1);
  const labels = new Uint8Array(count);
  for (let r = 0; r < count; r++) {
    let best = 0;
    let max = Number.NEGATIVE_INFINITY;
    for (let c = 0; c < classCount; c++) {
      let s = 0;
      for (let i = 0; i < featureCount; i++)
        s += projection[c * featureCount + i]! * features[r * featureCount + i]!;
      if (s > max) {
        max = s;
        best = c;
      }
    }
    labels[r] = best;
  }
  return { features, labels, count, featureCount, classCount };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

const SPEC = mlp(37, [33, 17], 5);

describe('train', () => {
  it('one full-batch step matches the CPU engine', async () => {
    const data = dataset(SPEC, 40, 1);
    const initial = initParameters(SPEC, 7);
    const config: TrainConfig = {
      learningRate: 0.1,
      momentum: 0.9,
      batchSize: 64,
      epochs: 1,
      proximalMu: 0.01,
      shuffleSeed: 3,
    };
    const got = await gpu.train(SPEC, initial, data, config);
    const want = await cpu.train(SPEC, initial, data, config);
    expect(got.steps).toBe(1);
    expect(got.samples).toBe(40);
    expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(1e-6);
    expect(maxAbsDiff(got.parameters, initial)).toBeGreaterThan(1e-3);
    expect(Math.abs(got.meanLoss - want.meanLoss)).toBeLessThanOrEqual(1e-5 * want.meanLoss);
  });

  it('several epochs with a partial last batch, momentum and FedProx match the CPU engine', async () => {
    const data = dataset(SPEC, 203, 2);
    const initial = initParameters(SPEC, 8);
    const config: TrainConfig = {
      learningRate: 0.05,
      momentum: 0.5,
      batchSize: 16,
      epochs: 3,
      proximalMu: 0.1,
      shuffleSeed: 11,
    };
    const got = await gpu.train(SPEC, initial, data, config);
    const want = await cpu.train(SPEC, initial, data, config);
    expect(got.steps).toBe(want.steps);
    expect(got.steps).toBe(3 * 13);
    expect(got.samples).toBe(3 * 203);
    expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(2e-5);
    expect(Math.abs(got.meanLoss - want.meanLoss)).toBeLessThanOrEqual(1e-5 * want.meanLoss);
    // It learns: evaluation loss drops from the initial model's.
    const before = await gpu.evaluate(SPEC, initial, data);
    const after = await gpu.evaluate(SPEC, got.parameters, data);
    expect(after.loss).toBeLessThan(before.loss);
  });

  it('the 2NN trains B=10 like the CPU engine (and reports throughput)', async () => {
    const data = dataset(MNIST_2NN, 100, 3);
    const initial = initParameters(MNIST_2NN, 1);
    const config: TrainConfig = {
      learningRate: 0.05,
      momentum: 0,
      batchSize: 10,
      epochs: 1,
      proximalMu: 0,
      shuffleSeed: 1,
    };
    const t0 = performance.now();
    const got = await gpu.train(MNIST_2NN, initial, data, config);
    const ms = performance.now() - t0;
    const want = await cpu.train(MNIST_2NN, initial, data, config);
    expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(2e-5);
    console.info(
      `${gpu.description}: 2NN B=10 ${((data.count / ms) * 1000).toFixed(0)} samples/s (incl. compile)`,
    );
  });

  it('leaves the initial parameters untouched and validates like the CPU engine', async () => {
    const data = dataset(SPEC, 10, 4);
    const initial = initParameters(SPEC, 9);
    const copy = new Float32Array(initial);
    const config: TrainConfig = {
      learningRate: 0.1,
      momentum: 0,
      batchSize: 4,
      epochs: 1,
      proximalMu: 0,
      shuffleSeed: 0,
    };
    await gpu.train(SPEC, initial, data, config);
    expect(initial).toEqual(copy);
    await expect(gpu.train(SPEC, initial, data, { ...config, momentum: 1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('config.momentum'),
    });
    await expect(gpu.train(SPEC, initial.subarray(1), data, config)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('initial length'),
    });
    const bad = new Float32Array(initial);
    bad[5] = Number.NaN;
    await expect(gpu.train(SPEC, bad, data, config)).rejects.toMatchObject({ code: 'UPDATE_NON_FINITE' });
  });
});

describe('evaluate', () => {
  it('loss and accuracy match the CPU engine (several chunks)', async () => {
    const data = dataset(SPEC, 4100, 5);
    const parameters = initParameters(SPEC, 10);
    const got = await gpu.evaluate(SPEC, parameters, data);
    const want = await cpu.evaluate(SPEC, parameters, data);
    expect(got.count).toBe(4100);
    expect(Math.abs(got.loss - want.loss)).toBeLessThanOrEqual(1e-5 * want.loss);
    expect(got.accuracy).toBe(want.accuracy);
    expectConfusion(got, data, want);
  });
});

describe('adapter', () => {
  it('description names the adapter', () => {
    expect(gpu.kind).toBe('webgpu');
    expect(gpu.description).toMatch(/^webgpu: \S+/);
  });

  it('refuses a software adapter unless allowed, naming what it found', async () => {
    const saved = process.env['COHORT_GPU_ALLOW_SOFTWARE'];
    delete process.env['COHORT_GPU_ALLOW_SOFTWARE'];
    try {
      if (gpu.description.includes('(software)')) {
        const error = await createWebGpuEngine({ allowSoftware: false }).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(GpuError);
        expect(error).toMatchObject({ code: 'GPU_SOFTWARE_REFUSED' });
        const message = (error as GpuError).message;
        expect(message).toMatch(/llvmpipe|lavapipe|swiftshader/i);
        expect(message).toContain('allowSoftware');
        expect(message).toContain('VK_ICD_FILENAMES');
      } else {
        // A real GPU: it is chosen without allowSoftware.
        const engine = await createWebGpuEngine({ allowSoftware: false });
        expect(engine.description).not.toContain('(software)');
        await engine.dispose();
      }
    } finally {
      if (saved !== undefined) process.env['COHORT_GPU_ALLOW_SOFTWARE'] = saved;
    }
  });

  it('a disposed engine refuses work with GPU_DEVICE_LOST', async () => {
    const engine = await createWebGpuEngine({ allowSoftware: true });
    await engine.dispose();
    await expect(engine.kernels.relu(new Float32Array(4))).rejects.toMatchObject({ code: 'GPU_DEVICE_LOST' });
  });
});

describe('train: stopping early', () => {
  const initial = initParameters(SPEC, 12);
  /** 203 rows in batches of 16: 13 steps per epoch (12 of 16 rows, then 11). */
  const data = dataset(SPEC, 203, 6);
  const config: TrainConfig = {
    learningRate: 0.05,
    momentum: 0.5,
    batchSize: 16,
    epochs: 3,
    proximalMu: 0.1,
    shuffleSeed: 11,
  };

  function same(a: Float32Array, b: Float32Array): boolean {
    return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
      Buffer.from(b.buffer, b.byteOffset, b.byteLength),
    );
  }

  it('an already aborted signal or a past deadline takes no step and returns initial', async () => {
    const aborted = await gpu.train(SPEC, initial, data, { ...config, signal: AbortSignal.abort() });
    expect(aborted).toMatchObject({ stopped: 'aborted', steps: 0, samples: 0, meanLoss: 0 });
    expect(same(aborted.parameters, initial)).toBe(true);
    const late = await gpu.train(SPEC, initial, data, { ...config, stopAtUnixMs: Date.now() - 1 });
    expect(late).toMatchObject({ stopped: 'deadline', steps: 0, samples: 0, meanLoss: 0 });
    expect(same(late.parameters, initial)).toBe(true);
  });

  it('a run that is never cut is complete and bit-identical to a run without the fields', async () => {
    const plain = await gpu.train(SPEC, initial, data, config);
    const cuttable = await gpu.train(SPEC, initial, data, {
      ...config,
      signal: new AbortController().signal,
      stopAtUnixMs: Date.now() + 3_600_000,
    });
    expect(plain.stopped).toBe('complete');
    expect(cuttable).toMatchObject({
      stopped: 'complete',
      steps: 39,
      samples: 3 * 203,
      meanLoss: plain.meanLoss,
    });
    expect(same(cuttable.parameters, plain.parameters)).toBe(true);
  });

  it('stopping after exactly k steps keeps the k-th step, not the steps already queued after it', async () => {
    // k below, at and above the steps kept in flight (8), so snapshots are taken from every slot.
    for (const k of [1, 5, 8, 9, 13, 20, 38]) {
      const { signal, looks } = abortOnLook(k);
      const got = await gpu.train(SPEC, initial, data, { ...config, signal });
      const want = await cpu.train(SPEC, initial, data, { ...config, signal: abortOnLook(k).signal });
      expect(looks()).toBe(k + 1);
      expect(got.stopped).toBe('aborted');
      expect(got.steps).toBe(k);
      expect(got.samples).toBe(want.samples);
      expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(2e-5);
      expect(Math.abs(got.meanLoss - want.meanLoss)).toBeLessThanOrEqual(1e-5 * want.meanLoss);
    }
    // Cut after the first epoch, it is exactly the one-epoch run (which takes the pipelined path).
    const oneEpoch = await gpu.train(SPEC, initial, data, { ...config, epochs: 1 });
    const cut = await gpu.train(SPEC, initial, data, { ...config, signal: abortOnLook(13).signal });
    expect(cut).toMatchObject({ stopped: 'aborted', steps: 13, samples: 203, meanLoss: oneEpoch.meanLoss });
    expect(same(cut.parameters, oneEpoch.parameters)).toBe(true);
    // No look follows the last step: a signal that would abort then leaves the run complete.
    const { signal, looks } = abortOnLook(39);
    const full = await gpu.train(SPEC, initial, data, { ...config, signal });
    expect(looks()).toBe(39);
    expect(full.stopped).toBe('complete');
  });

  it('an abort from a timer during a long training stops it, and what ran is a prefix of the run', async () => {
    const long: TrainConfig = { ...config, batchSize: 10, epochs: 500 }; // 10,500 steps
    const controller = new AbortController();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
      if (ticks === 3) controller.abort();
    }, 1);
    let result: TrainResult;
    try {
      result = await gpu.train(SPEC, initial, data, { ...long, signal: controller.signal });
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThanOrEqual(3);
    expect(result.stopped).toBe('aborted');
    expect(result.steps).toBeGreaterThan(0);
    expect(result.steps).toBeLessThan(500 * 21);
    const counted = await gpu.train(SPEC, initial, data, {
      ...long,
      signal: abortOnLook(result.steps).signal,
    });
    expect(counted.samples).toBe(result.samples);
    expect(same(counted.parameters, result.parameters)).toBe(true);
  });

  it('refuses a bad signal or deadline like the CPU engine', async () => {
    await expect(
      gpu.train(SPEC, initial, data, { ...config, stopAtUnixMs: Number.NaN }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^config\.stopAtUnixMs must be a finite number .*got NaN$/),
    });
    await expect(
      gpu.train(SPEC, initial, data, { ...config, signal: { aborted: false } as unknown as AbortSignal }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'config.signal must be an AbortSignal, got Object',
    });
  });
});
