import { describe, expect, it } from 'vitest';
import {
  initParameters,
  logisticRegression,
  mlp,
  parameterCount,
  type QuantizeParams,
  quantize,
} from '../../federation/index.ts';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Dataset, TrainConfig } from '../../gpu/index.ts';

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
