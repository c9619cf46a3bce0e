import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defineModel,
  denseWidths,
  FEDAVG_CNN,
  initParameters,
  type ModelSpec,
  modelLayout,
} from '../../federation/index.ts';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Dataset, TrainConfig, TrainingEngine } from '../../gpu/index.ts';
import { createWebGpuEngine } from '../../gpu/webgpu/index.ts';
import { rng } from '../helpers/rng.ts';
import { abortOnLook } from './abort-on-look.ts';
import { expectConfusion, maxAbsDiff } from './webgpu-compare.ts';

/*
 * The WebGPU engine's generic sequential path (convolutions, pooling, any layer order) against the
 * CPU reference engine (float64 sums) on the same mini-batches. Fails (never skips) when no
 * adapter exists.
 *
 * Tolerances: parameters after a few steps with momentum and FedProx within 2e-5 absolute (the
 * MLP path's bound: float32 vs float64 rounding of sums of up to a few hundred terms, compounded
 * over steps; parameters are O(0.1–1)); mean training loss and evaluation loss relative 1e-5;
 * evaluation accuracy identical (random models have no logit ties within 1e-5). The FedAvg CNN's
 * step (sums over 3136 dense inputs and 800 conv2 taps) is held to the same 2e-5. On lavapipe the
 * differences seen are below 2e-7 (parameters) and 1e-6 (relative loss).
 */

let gpu: TrainingEngine;
const cpu = createCpuEngine();

beforeAll(async () => {
  gpu = await createWebGpuEngine({ allowSoftware: true });
});
afterAll(async () => {
  await gpu?.dispose();
});

/** `count` random rows for `spec` (features in [0, 1), a third of them 0, like pixels), random labels. */
function dataset(spec: ModelSpec, count: number, seed: number): Dataset {
  const next = rng(seed);
  const { inputSize: featureCount, classes: classCount } = modelLayout(spec);
  const features = Float32Array.from({ length: count * featureCount }, () => (next() < 0.33 ? 0 : next()));
  const labels = Uint8Array.from({ length: count }, () => Math.floor(next() * classCount));
  return { features, labels, count, featureCount, classCount };
}

/** He-initialized parameters with a little noise on everything, so biases are not all zero. */
function parameters(spec: ModelSpec, seed: number): Float32Array {
  const next = rng(seed + 1000);
  return initParameters(spec, seed).map((w) => w + (next() * 2 - 1) * 0.05);
}

/** The brief's small CNN: conv 3×3×4 same, ReLU, pool 2, flatten, dense 3. */
const SMALL_CNN = defineModel(
  'small-cnn',
  [1, 8, 8],
  [
    { type: 'conv2d', filters: 4, kernel: 3, padding: 'same' },
    { type: 'relu' },
    { type: 'maxpool2d', size: 2 },
    { type: 'flatten' },
    { type: 'dense', units: 3 },
  ],
);

/**
 * Two channels, odd sizes, a 'valid' convolution, pooling with a leftover row and column, a second
 * convolution (so gradients flow through pool and ReLU into nothing below the first conv), a
 * hidden dense layer on an implicit flatten, and a final softmax.
 */
const DEEP_CNN = defineModel(
  'deep-cnn',
  [2, 9, 7],
  [
    { type: 'conv2d', filters: 3, kernel: 3, padding: 'valid' },
    { type: 'relu' },
    { type: 'maxpool2d', size: 2 },
    { type: 'conv2d', filters: 4, kernel: 3, padding: 'same' },
    { type: 'relu' },
    { type: 'dense', units: 5 },
    { type: 'relu' },
    { type: 'dense', units: 3 },
    { type: 'softmax' },
  ],
);

/** Dense layers only, but not an MLP (a ReLU on the input, none between the dense layers). */
const ODD_DENSE = defineModel(
  'odd-dense',
  [2, 3, 3],
  [{ type: 'relu' }, { type: 'flatten' }, { type: 'dense', units: 6 }, { type: 'dense', units: 4 }],
);

const CONFIG: TrainConfig = {
  learningRate: 0.05,
  momentum: 0.5,
  batchSize: 6,
  epochs: 2,
  proximalMu: 0.1,
  shuffleSeed: 5,
};

describe('train: convolutional and other non-MLP models', () => {
  it.each([
    ['small CNN', SMALL_CNN],
    ['deep CNN', DEEP_CNN],
    ['dense layers out of MLP order', ODD_DENSE],
  ] as const)('%s: a few mini-batches match the CPU engine', async (_, spec) => {
    expect(denseWidths(spec)).toBeNull();
    const data = dataset(spec, 20, 1);
    const initial = parameters(spec, 2);
    const got = await gpu.train(spec, initial, data, CONFIG);
    const want = await cpu.train(spec, initial, data, CONFIG);
    // 20 rows in batches of 6: 4 steps an epoch (the last of 2 rows).
    expect(got).toMatchObject({ steps: 8, samples: 40, stopped: 'complete' });
    expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(2e-5);
    expect(maxAbsDiff(got.parameters, initial)).toBeGreaterThan(1e-3);
    expect(Math.abs(got.meanLoss - want.meanLoss)).toBeLessThanOrEqual(1e-5 * want.meanLoss);
  });

  it('stops after exactly k steps like the CPU engine, and an uncut run is bit-identical', async () => {
    const data = dataset(DEEP_CNN, 20, 3);
    const initial = parameters(DEEP_CNN, 4);
    for (const k of [1, 5]) {
      const got = await gpu.train(DEEP_CNN, initial, data, { ...CONFIG, signal: abortOnLook(k).signal });
      const want = await cpu.train(DEEP_CNN, initial, data, { ...CONFIG, signal: abortOnLook(k).signal });
      expect(got).toMatchObject({ stopped: 'aborted', steps: k, samples: want.samples });
      expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(2e-5);
    }
    const plain = await gpu.train(DEEP_CNN, initial, data, CONFIG);
    const cuttable = await gpu.train(DEEP_CNN, initial, data, {
      ...CONFIG,
      stopAtUnixMs: Date.now() + 3_600_000,
    });
    expect(cuttable).toMatchObject({ stopped: 'complete', steps: 8, meanLoss: plain.meanLoss });
    expect(maxAbsDiff(cuttable.parameters, plain.parameters)).toBe(0);
  });
});

describe('evaluate: convolutional and other non-MLP models', () => {
  it.each([
    ['small CNN', SMALL_CNN],
    ['deep CNN', DEEP_CNN],
    ['dense layers out of MLP order', ODD_DENSE],
  ] as const)('%s: loss and accuracy match the CPU engine (several chunks)', async (_, spec) => {
    // Chunks of 2048 rows: 2048, 2048, 4.
    const data = dataset(spec, 4100, 6);
    const params = parameters(spec, 7);
    const got = await gpu.evaluate(spec, params, data);
    const want = await cpu.evaluate(spec, params, data);
    expect(got.count).toBe(4100);
    expect(Math.abs(got.loss - want.loss)).toBeLessThanOrEqual(1e-5 * want.loss);
    expect(got.accuracy).toBe(want.accuracy);
    expectConfusion(got, data, want);
  });
});

describe('the FedAvg MNIST CNN', () => {
  const initial = parameters(FEDAVG_CNN, 11);

  it('evaluates a few MNIST-shaped rows like the CPU engine', async () => {
    const data = dataset(FEDAVG_CNN, 6, 12);
    const got = await gpu.evaluate(FEDAVG_CNN, initial, data);
    const want = await cpu.evaluate(FEDAVG_CNN, initial, data);
    expect(Math.abs(got.loss - want.loss)).toBeLessThanOrEqual(1e-5 * want.loss);
    expect(got.accuracy).toBe(want.accuracy);
    expectConfusion(got, data, want);
  });

  it('one mini-batch step matches the CPU engine', async () => {
    const data = dataset(FEDAVG_CNN, 4, 13);
    const config: TrainConfig = { ...CONFIG, batchSize: 4, epochs: 1 };
    const got = await gpu.train(FEDAVG_CNN, initial, data, config);
    const want = await cpu.train(FEDAVG_CNN, initial, data, config);
    expect(got).toMatchObject({ steps: 1, samples: 4, stopped: 'complete' });
    expect(maxAbsDiff(got.parameters, want.parameters)).toBeLessThanOrEqual(2e-5);
    expect(maxAbsDiff(got.parameters, initial)).toBeGreaterThan(1e-4);
    expect(Math.abs(got.meanLoss - want.meanLoss)).toBeLessThanOrEqual(1e-5 * want.meanLoss);
  });
});
