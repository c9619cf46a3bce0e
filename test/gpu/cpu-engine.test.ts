import { describe, expect, it } from 'vitest';
import {
  initParameters,
  logisticRegression,
  mlp,
  modelLayout,
  parameterCount,
  type QuantizeParams,
  quantize,
} from '../../federation/index.ts';
import {
  assertTrainConfig,
  backwardBatch,
  createCpuEngine,
  createMlpWorkspace,
  forwardBatch,
  loadBatch,
  sgdStepInto,
} from '../../gpu/cpu/index.ts';
import { batchOrder, type Dataset, type TrainConfig, type TrainResult } from '../../gpu/index.ts';
import { abortOnLook } from './abort-on-look.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Two classes split by the line x0 + x1 = 0, with a margin of 0.2. */
function separable(count: number, seed: number): Dataset {
  const next = rng(seed);
  const features = new Float32Array(count * 2);
  const labels = new Uint8Array(count);
  for (let r = 0; r < count; ) {
    const a = next() * 4 - 2;
    const b = next() * 4 - 2;
    if (Math.abs(a + b) < 0.2) continue;
    features[2 * r] = a;
    features[2 * r + 1] = b;
    labels[r] = a + b > 0 ? 1 : 0;
    r++;
  }
  return { features, labels, count, featureCount: 2, classCount: 2 };
}

/** Three Gaussian-ish blobs in 4 dimensions. */
function blobs(count: number, seed: number): Dataset {
  const next = rng(seed);
  const centers = [
    [1, 1, 0, 0],
    [-1, 1, 0, 1],
    [0, -1, 1, -1],
  ];
  const features = new Float32Array(count * 4);
  const labels = new Uint8Array(count);
  for (let r = 0; r < count; r++) {
    const c = r % 3;
    labels[r] = c;
    for (let i = 0; i < 4; i++)
      features[r * 4 + i] = centers[c]![i]! + (next() + next() + next() - 1.5) * 0.8;
  }
  return { features, labels, count, featureCount: 4, classCount: 3 };
}

const CONFIG: TrainConfig = {
  learningRate: 0.1,
  momentum: 0.5,
  batchSize: 10,
  epochs: 3,
  proximalMu: 0,
  shuffleSeed: 17,
};

function distance(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i]! - b[i]!) ** 2;
  return Math.sqrt(s);
}

describe('createCpuEngine', () => {
  const engine = createCpuEngine();

  it('identifies itself', () => {
    expect(engine.kind).toBe('cpu');
    expect(engine.description).toBe('cpu: TypeScript reference (1 thread)');
  });

  it('is deterministic: the same seed gives bit-identical parameters, another seed differs', async () => {
    const spec = mlp(4, [8], 3);
    const data = blobs(95, 1);
    const initial = initParameters(spec, 5);
    const a = await engine.train(spec, initial, data, CONFIG);
    const b = await createCpuEngine().train(spec, initial, data, CONFIG);
    const c = await engine.train(spec, initial, data, { ...CONFIG, shuffleSeed: 18 });
    expect(Buffer.from(a.parameters.buffer).equals(Buffer.from(b.parameters.buffer))).toBe(true);
    expect(a.meanLoss).toBe(b.meanLoss);
    expect(Array.from(c.parameters)).not.toEqual(Array.from(a.parameters));
  });

  it('does not modify its inputs and counts samples and steps', async () => {
    const spec = mlp(4, [8], 3);
    const data = blobs(25, 2);
    const initial = initParameters(spec, 5);
    const initialCopy = initial.slice();
    const featuresCopy = data.features.slice();
    const labelsCopy = data.labels.slice();
    const result = await engine.train(spec, initial, data, { ...CONFIG, epochs: 2 });
    expect(initial).toEqual(initialCopy);
    expect(data.features).toEqual(featuresCopy);
    expect(data.labels).toEqual(labelsCopy);
    expect(result.parameters).not.toBe(initial);
    expect(result.samples).toBe(50);
    expect(result.steps).toBe(6); // 25 rows in batches of 10: 10, 10, 5 per epoch
  });

  it('meanLoss weights batches by size (equals the initial loss when η is negligible)', async () => {
    const spec = mlp(4, [8], 3);
    const data = blobs(25, 3);
    const initial = initParameters(spec, 6);
    const before = await engine.evaluate(spec, initial, data);
    const result = await engine.train(spec, initial, data, { ...CONFIG, learningRate: 1e-30, epochs: 1 });
    expect(result.meanLoss).toBeCloseTo(before.loss, 6);
  });

  it('logistic regression learns a linearly separable 2-class set to ≥ 95% accuracy', async () => {
    const spec = logisticRegression(2, 2);
    const train = separable(400, 10);
    const test = separable(200, 11);
    const initial = new Float32Array(parameterCount(spec));
    const result = await engine.train(spec, initial, train, { ...CONFIG, learningRate: 0.5, epochs: 10 });
    const evaluation = await engine.evaluate(spec, result.parameters, test);
    expect(evaluation.count).toBe(200);
    expect(evaluation.accuracy).toBeGreaterThanOrEqual(0.95);
  });

  it('a small MLP on a 3-class problem lowers its loss', async () => {
    const spec = mlp(4, [16, 8], 3);
    const data = blobs(300, 20);
    const initial = initParameters(spec, 9);
    const before = await engine.evaluate(spec, initial, data);
    const first = await engine.train(spec, initial, data, { ...CONFIG, epochs: 1 });
    const result = await engine.train(spec, initial, data, { ...CONFIG, epochs: 20 });
    const after = await engine.evaluate(spec, result.parameters, data);
    expect(after.loss).toBeLessThan(before.loss * 0.5);
    expect(result.meanLoss).toBeLessThan(first.meanLoss);
    expect(after.accuracy).toBeGreaterThan(0.85);
  });

  it('the proximal term keeps the model near its start', async () => {
    const spec = mlp(4, [16], 3);
    const data = blobs(120, 30);
    const initial = initParameters(spec, 3);
    const config = { ...CONFIG, momentum: 0, epochs: 5 };
    const free = await engine.train(spec, initial, data, config);
    // η·μ = 1: every step lands at w_start − η·g, so the model never drifts further than one step.
    const held = await engine.train(spec, initial, data, { ...config, proximalMu: 10 });
    const freeDistance = distance(free.parameters, initial);
    expect(freeDistance).toBeGreaterThan(0.5);
    expect(distance(held.parameters, initial)).toBeLessThan(0.2 * freeDistance);
  });

  it('evaluates arg-max accuracy with ties to the lowest class and mean cross-entropy', async () => {
    const spec = logisticRegression(2, 3);
    const data: Dataset = {
      features: Float32Array.from([1, 0, 0, 1, 0, 0, 5, 5]),
      labels: Uint8Array.from([0, 1, 0, 2]),
      count: 4,
      featureCount: 2,
      classCount: 3,
    };
    const zero = await engine.evaluate(spec, new Float32Array(parameterCount(spec)), data);
    expect(zero.loss).toBeCloseTo(Math.log(3), 12); // all logits equal
    expect(zero.accuracy).toBe(0.5); // predicts class 0 everywhere
    // W rows: class 0 ← x0, class 1 ← x1, class 2 ← nothing; bias favours class 2 slightly.
    const p = Float32Array.from([10, 0, 0, 10, 0, 0, 0, 0, 1]);
    const good = await engine.evaluate(spec, p, data);
    // Rows: [1,0] → 0 ✓, [0,1] → 1 ✓, [0,0] → 2 ✗ (label 0), [5,5] → tie 0/1 → 0 ✗ (label 2).
    expect(good.accuracy).toBe(0.5);
    // [label][prediction]: label 0 → 0 once and → 2 once; label 1 → 1; label 2 → 0.
    expect(Array.from(good.confusion!)).toEqual([1, 0, 1, 0, 1, 0, 1, 0, 0]);
    expect(Array.from(zero.confusion!)).toEqual([2, 0, 0, 1, 0, 0, 1, 0, 0]);
  });

  it('rejects bad inputs with named messages', async () => {
    const spec = logisticRegression(2, 2);
    const data = separable(10, 1);
    const initial = new Float32Array(parameterCount(spec));
    await expect(engine.train(spec, new Float32Array(3), data, CONFIG)).rejects.toThrow(
      /initial length 3, model logreg \[2-2\] expects 6/,
    );
    await expect(engine.evaluate(spec, new Float32Array(5), data)).rejects.toThrow(/parameters length 5/);
    await expect(engine.evaluate(spec, Float32Array.from([0, 0, Number.NaN, 0, 0, 0]), data)).rejects.toThrow(
      /parameters\[2\] is NaN/,
    );
    const badLabel = { ...data, labels: data.labels.slice() };
    badLabel.labels[4] = 2;
    await expect(engine.train(spec, initial, badLabel, CONFIG)).rejects.toThrow(
      /data row 4 label 2 is outside \[0, 2\)/,
    );
    const badFeature = { ...data, features: data.features.slice() };
    badFeature.features[7] = Number.NaN;
    await expect(engine.train(spec, initial, badFeature, CONFIG)).rejects.toThrow(
      /data row 3 feature 1 is NaN/,
    );
    await expect(engine.train(logisticRegression(3, 2), new Float32Array(8), data, CONFIG)).rejects.toThrow(
      /data.featureCount 2, model logreg \[3-2\] expects 3/,
    );
    const bad: [keyof TrainConfig, number][] = [
      ['learningRate', 0],
      ['learningRate', Number.POSITIVE_INFINITY],
      ['momentum', 1],
      ['momentum', -0.1],
      ['batchSize', 0],
      ['batchSize', 2.5],
      ['epochs', 0],
      ['proximalMu', -1],
      ['proximalMu', Number.NaN],
      ['shuffleSeed', -1],
      ['shuffleSeed', 2 ** 32],
    ];
    for (const [field, value] of bad) {
      await expect(engine.train(spec, initial, data, { ...CONFIG, [field]: value })).rejects.toThrow(
        new RegExp(`config\\.${field}`),
      );
    }
  });

  it('quantize gives the same integers and residual as federation/quantize', async () => {
    const next = rng(99);
    const update = new Float32Array(1000).map(() => (next() - 0.5) * 0.1);
    const residual = new Float32Array(1000).map(() => (next() - 0.5) * 0.01);
    const params: QuantizeParams = { bits: 8, clip: 0.04, seed: { key0: 12, key1: 34 }, counterBase: 5 };
    const ours = await engine.quantize(update, residual, params);
    const reference = quantize(update, residual, params);
    expect(ours.levels).toEqual(reference.levels);
    expect(ours.residual).toEqual(reference.residual);
    await expect(engine.quantize(update, residual.subarray(1), params)).rejects.toThrow(
      /residual length 999/,
    );
  });
});

describe('createCpuEngine: stopping early and yielding to the event loop', () => {
  const engine = createCpuEngine();
  const spec = mlp(4, [16, 8], 3);
  const initial = initParameters(spec, 4);
  /** 25 rows in batches of 10: steps of 10, 10, 5 rows per epoch. */
  const small = blobs(25, 40);
  /** Long enough (600,000 steps, seconds) that anything that stops it early must be the cause. */
  const LONG: TrainConfig = { ...CONFIG, epochs: 20_000 };
  const long = blobs(300, 41);
  const fullSteps = LONG.epochs * 30;

  function same(a: Float32Array, b: Float32Array): boolean {
    return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
      Buffer.from(b.buffer, b.byteOffset, b.byteLength),
    );
  }

  /** The first k steps of the training loop, written out from its building blocks. */
  function referenceSteps(data: Dataset, config: TrainConfig, k: number): Float32Array {
    const layout = modelLayout(spec);
    const batch = Math.min(config.batchSize, data.count);
    const ws = createMlpWorkspace(layout, batch, true);
    const w = new Float32Array(initial);
    let steps = 0;
    for (let epoch = 0; steps < k; epoch++) {
      const order = batchOrder(data.count, config.shuffleSeed, epoch);
      for (let start = 0; start < data.count && steps < k; start += batch, steps++) {
        const n = Math.min(batch, data.count - start);
        loadBatch(ws, data, order, start, n);
        forwardBatch(ws, w, n);
        backwardBatch(ws, w, n);
        const { learningRate, momentum, proximalMu } = config;
        sgdStepInto(
          w,
          ws.grad,
          ws.velocity,
          initial,
          learningRate,
          momentum,
          proximalMu,
          layout.parameterCount,
        );
      }
    }
    return w;
  }

  it('an already aborted signal takes no step and returns a copy of initial', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await engine.train(spec, initial, small, { ...CONFIG, signal: controller.signal });
    expect(result).toMatchObject({ stopped: 'aborted', steps: 0, samples: 0, meanLoss: 0 });
    expect(result.parameters).not.toBe(initial);
    expect(same(result.parameters, initial)).toBe(true);
  });

  it('a deadline already past takes no step; abort wins when both hold', async () => {
    for (const stopAtUnixMs of [Date.now() - 1, 0, -1e15]) {
      const result = await engine.train(spec, initial, small, { ...CONFIG, stopAtUnixMs });
      expect(result).toMatchObject({ stopped: 'deadline', steps: 0, samples: 0, meanLoss: 0 });
      expect(same(result.parameters, initial)).toBe(true);
    }
    const both = await engine.train(spec, initial, small, {
      ...CONFIG,
      stopAtUnixMs: 0,
      signal: AbortSignal.abort(),
    });
    expect(both.stopped).toBe('aborted');
  });

  it('a run that is never cut reports complete and is bit-identical to a run without the fields', async () => {
    const plain = await engine.train(spec, initial, small, CONFIG);
    const cuttable = await engine.train(spec, initial, small, {
      ...CONFIG,
      signal: new AbortController().signal,
      stopAtUnixMs: Date.now() + 3_600_000,
    });
    expect(plain.stopped).toBe('complete');
    expect(cuttable).toMatchObject({ stopped: 'complete', steps: 9, samples: 75, meanLoss: plain.meanLoss });
    expect(same(cuttable.parameters, plain.parameters)).toBe(true);
  });

  it('stopping after exactly k steps gives the first k steps of the full run', async () => {
    const plain = await engine.train(spec, initial, small, CONFIG);
    for (const k of [1, 2, 4, 8]) {
      const { signal, looks } = abortOnLook(k);
      const cut = await engine.train(spec, initial, small, { ...CONFIG, signal });
      expect(looks()).toBe(k + 1);
      expect(cut.stopped).toBe('aborted');
      expect(cut.steps).toBe(k);
      // Batches of 10, 10, 5 rows per epoch.
      expect(cut.samples).toBe([10, 20, 25][(k - 1) % 3]! + 25 * Math.floor((k - 1) / 3));
      expect(same(cut.parameters, referenceSteps(small, CONFIG, k))).toBe(true);
    }
    // Cut at an epoch boundary, it is exactly the shorter run, mean loss included.
    const oneEpoch = await engine.train(spec, initial, small, { ...CONFIG, epochs: 1 });
    const cut = await engine.train(spec, initial, small, { ...CONFIG, signal: abortOnLook(3).signal });
    expect(cut).toMatchObject({ steps: 3, samples: 25, meanLoss: oneEpoch.meanLoss });
    expect(same(cut.parameters, oneEpoch.parameters)).toBe(true);
    // A look that would abort after the last step never happens: the run is complete.
    const { signal, looks } = abortOnLook(9);
    const full = await engine.train(spec, initial, small, { ...CONFIG, signal });
    expect(looks()).toBe(9);
    expect(full.stopped).toBe('complete');
    expect(same(full.parameters, plain.parameters)).toBe(true);
  });

  it('timers run during training, and an abort from a timer stops it after the current batch', async () => {
    const controller = new AbortController();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
      if (ticks === 5) controller.abort();
    }, 1);
    let result: TrainResult;
    try {
      result = await engine.train(spec, initial, long, { ...LONG, signal: controller.signal });
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThanOrEqual(5);
    expect(result.stopped).toBe('aborted');
    expect(result.steps).toBeGreaterThan(0);
    expect(result.steps).toBeLessThan(fullSteps);
    expect(result.meanLoss).toBeGreaterThan(0);
    // What ran is exactly the full run's first steps.
    const counted = await engine.train(spec, initial, long, {
      ...LONG,
      signal: abortOnLook(result.steps).signal,
    });
    expect(counted.samples).toBe(result.samples);
    expect(counted.meanLoss).toBe(result.meanLoss);
    expect(same(counted.parameters, result.parameters)).toBe(true);
  });

  it('a deadline during training stops it', async () => {
    const result = await engine.train(spec, initial, long, { ...LONG, stopAtUnixMs: Date.now() + 50 });
    expect(result.stopped).toBe('deadline');
    expect(result.steps).toBeLessThan(fullSteps);
    const counted = await engine.train(spec, initial, long, {
      ...LONG,
      signal: abortOnLook(result.steps).signal,
    });
    expect(same(counted.parameters, result.parameters)).toBe(true);
  });

  it('timers also run during training without a signal or deadline', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const epochs = 1000; // 30,000 steps: several yields
    try {
      await engine.train(spec, initial, long, { ...CONFIG, epochs });
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThanOrEqual(2);
  });

  it('concurrent calls on one engine do not share buffers', async () => {
    const config = { ...CONFIG, epochs: 300 };
    const other = blobs(300, 42);
    const aloneA = await engine.train(spec, initial, long, config);
    const aloneB = await engine.train(spec, initial, other, { ...config, shuffleSeed: 5 });
    const [a, b] = await Promise.all([
      engine.train(spec, initial, long, config),
      engine.train(spec, initial, other, { ...config, shuffleSeed: 5 }),
    ]);
    expect(same(a.parameters, aloneA.parameters)).toBe(true);
    expect(same(b.parameters, aloneB.parameters)).toBe(true);
  });

  it('the shared validator refuses a bad signal or deadline, naming the field', async () => {
    const bad: [Partial<Record<keyof TrainConfig, unknown>>, RegExp][] = [
      [{ stopAtUnixMs: Number.NaN }, /^config\.stopAtUnixMs must be a finite number .*got NaN$/],
      [{ stopAtUnixMs: Number.POSITIVE_INFINITY }, /^config\.stopAtUnixMs .*got Infinity$/],
      [{ stopAtUnixMs: '2030-01-01' }, /^config\.stopAtUnixMs .*got 2030-01-01$/],
      [{ signal: { aborted: true } }, /^config\.signal must be an AbortSignal, got Object$/],
      [{ signal: new AbortController() }, /^config\.signal must be an AbortSignal, got AbortController$/],
      [{ signal: null }, /^config\.signal must be an AbortSignal, got null$/],
    ];
    for (const [fields, message] of bad) {
      const config = { ...CONFIG, ...fields } as TrainConfig;
      expect(() => assertTrainConfig(config)).toThrow(message);
      expect(() => assertTrainConfig(config, 'round.training')).toThrow(/^round\.training\./);
      await expect(engine.train(spec, initial, small, config)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(message),
      });
    }
    // Absent fields (or undefined) are fine.
    expect(() => assertTrainConfig({ ...CONFIG, signal: undefined, stopAtUnixMs: undefined })).not.toThrow();
  });
});
