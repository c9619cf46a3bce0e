import { describe, expect, it } from 'vitest';
import { denseWidths, initParameters, mlp, modelLayout } from '../../federation/index.ts';
import {
  backwardBatch,
  cpuKernels,
  createMlpWorkspace,
  createNonZeroRows,
  denseBackwardInputInto,
  denseForwardInto,
  denseWeightGradientInto,
  forwardBatch,
  indexNonZero,
  loadBatch,
} from '../../gpu/cpu/index.ts';
import type { Dataset } from '../../gpu/index.ts';

const f32 = (values: number[]): Float32Array => Float32Array.from(values);

/** Deterministic pseudo-random numbers in [0, 1) (LCG), so fixtures never change. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

// Shared fixture: x is 2×3, W is 2 outputs × 3 inputs.
//   x = [[1, 2, 3], [4, 5, 6]]   W = [[1, 0, −1], [0.5, 0.5, 0.5]]   b = [1, −2]
const X = f32([1, 2, 3, 4, 5, 6]);
const W = f32([1, 0, -1, 0.5, 0.5, 0.5]);
const B = f32([1, -2]);

describe('denseForward', () => {
  it('y = x·Wᵀ + b by hand', async () => {
    // Row 0: 1·1 + 2·0 + 3·(−1) + 1 = −1;  0.5·(1 + 2 + 3) − 2 = 1.
    // Row 1: 4 − 6 + 1 = −1;               0.5·15 − 2 = 5.5.
    expect(Array.from(await cpuKernels.denseForward(X, W, B, 2, 3, 2))).toEqual([-1, 1, -1, 5.5]);
  });

  it('the indexed (sparse) and dense loops agree, including the 4-output and 2-row blocks', () => {
    const next = rng(7);
    const batch = 5;
    const inputs = 9;
    const outputs = 7;
    const x = new Float32Array(batch * inputs).map(() => (next() < 0.5 ? 0 : next() - 0.5));
    const w = new Float32Array(outputs * inputs).map(() => next() - 0.5);
    const b = new Float32Array(outputs).map(() => next() - 0.5);
    const dense = new Float32Array(batch * outputs);
    const sparse = new Float32Array(batch * outputs);
    const rows = createNonZeroRows(batch, inputs);
    indexNonZero(x, batch, inputs, rows);
    denseForwardInto(x, w, 0, b, 0, dense, batch, inputs, outputs, null);
    denseForwardInto(x, w, 0, b, 0, sparse, batch, inputs, outputs, rows);
    for (let r = 0; r < batch; r++) {
      for (let o = 0; o < outputs; o++) {
        let s = 0;
        for (let i = 0; i < inputs; i++) s += x[r * inputs + i]! * w[o * inputs + i]!;
        const expected = Math.fround(s + b[o]!);
        expect(dense[r * outputs + o]).toBe(expected);
        expect(sparse[r * outputs + o]).toBe(expected);
      }
    }
  });

  it('rejects wrong lengths, bad shapes and non-finite values, naming the argument', async () => {
    await expect(cpuKernels.denseForward(X.subarray(1), W, B, 2, 3, 2)).rejects.toThrow(
      /x length 5, batch 2 × inputs 3 expects 6/,
    );
    await expect(cpuKernels.denseForward(X, W, f32([1]), 2, 3, 2)).rejects.toThrow(/b length 1/);
    await expect(cpuKernels.denseForward(X, f32([1, 0, Number.NaN, 0, 0, 0]), B, 2, 3, 2)).rejects.toThrow(
      /w\[2\] is NaN/,
    );
    await expect(cpuKernels.denseForward(X, W, B, 0, 3, 2)).rejects.toThrow(/batch must be an integer/);
    await expect(cpuKernels.denseForward(X, W, B, 2, 3, 2.5)).rejects.toThrow(/outputs must be an integer/);
  });
});

describe('denseBackward', () => {
  it('dx = dy·W, dW = dyᵀ·x, db = Σ dy by hand', async () => {
    const dy = f32([1, 2, 0, -1]); // [[1, 2], [0, −1]]
    const { dx, dw, db } = await cpuKernels.denseBackward(X, W, dy, 2, 3, 2);
    // dx row 0 = 1·[1, 0, −1] + 2·[0.5, 0.5, 0.5] = [2, 1, 0]; row 1 = −1·[0.5, 0.5, 0.5].
    expect(Array.from(dx)).toEqual([2, 1, 0, -0.5, -0.5, -0.5]);
    // dW[0] = 1·[1, 2, 3] + 0·[4, 5, 6]; dW[1] = 2·[1, 2, 3] − 1·[4, 5, 6] = [−2, −1, 0].
    expect(Array.from(dw)).toEqual([1, 2, 3, -2, -1, 0]);
    expect(Array.from(db)).toEqual([1, 1]);
  });

  it('matches a float64 reference on both paths, with zero rows of dy skipped', () => {
    const next = rng(11);
    const batch = 9;
    const inputs = 6;
    const outputs = 5;
    const x = new Float32Array(batch * inputs).map(() => (next() < 0.6 ? 0 : next() - 0.5));
    const w = new Float32Array(outputs * inputs).map(() => next() - 0.5);
    const dy = new Float32Array(batch * outputs).map(() => (next() < 0.3 ? 0 : next() - 0.5));
    const xRows = createNonZeroRows(batch, inputs);
    indexNonZero(x, batch, inputs, xRows);
    const dyRows = createNonZeroRows(batch, outputs);
    indexNonZero(dy, batch, outputs, dyRows);
    const dx = new Float32Array(batch * inputs).fill(99); // overwritten, not accumulated
    denseBackwardInputInto(w, 0, dy, dyRows, dx, batch, inputs, outputs);
    for (const rows of [null, xRows]) {
      const dw = new Float32Array(outputs * inputs).fill(99);
      const db = new Float32Array(outputs).fill(99);
      denseWeightGradientInto(x, rows, dy, dw, 0, db, 0, batch, inputs, outputs);
      for (let o = 0; o < outputs; o++) {
        let sb = 0;
        for (let r = 0; r < batch; r++) sb += dy[r * outputs + o]!;
        expect(db[o]).toBeCloseTo(sb, 6);
        for (let i = 0; i < inputs; i++) {
          let s = 0;
          for (let r = 0; r < batch; r++) s += dy[r * outputs + o]! * x[r * inputs + i]!;
          expect(dw[o * inputs + i]).toBeCloseTo(s, 6);
        }
      }
    }
    for (let r = 0; r < batch; r++) {
      for (let i = 0; i < inputs; i++) {
        let s = 0;
        for (let o = 0; o < outputs; o++) s += dy[r * outputs + o]! * w[o * inputs + i]!;
        expect(dx[r * inputs + i]).toBeCloseTo(s, 6);
      }
    }
  });

  it('rejects a dy of the wrong length', async () => {
    await expect(cpuKernels.denseBackward(X, W, f32([1, 2, 3]), 2, 3, 2)).rejects.toThrow(
      /dy length 3, batch 2 × outputs 2 expects 4/,
    );
  });
});

describe('relu', () => {
  it('max(x, 0)', async () => {
    expect(Array.from(await cpuKernels.relu(f32([-1, 0, 2.5, -0.5, 3])))).toEqual([0, 0, 2.5, 0, 3]);
  });

  it('backward passes dy only where the pre-activation is > 0', async () => {
    const got = await cpuKernels.reluBackward(f32([-1, 0, 2, 3]), f32([5, 6, 7, 8]));
    expect(Array.from(got)).toEqual([0, 0, 7, 8]);
  });

  it('rejects mismatched lengths and NaN', async () => {
    await expect(cpuKernels.reluBackward(f32([1, 2]), f32([1]))).rejects.toThrow(/dy length 1, x expects 2/);
    await expect(cpuKernels.relu(f32([1, Number.NaN]))).rejects.toThrow(/x\[1\] is NaN/);
  });
});

describe('softmaxCrossEntropy', () => {
  it('known answers: logits [0, ln 3] label 1 and [0, 0] label 0', async () => {
    const logits = f32([0, Math.log(3), 0, 0]);
    const { loss, dlogits } = await cpuKernels.softmaxCrossEntropy(logits, Uint8Array.from([1, 0]), 2, 2);
    // Row 0: softmax = [1/4, 3/4], loss −ln(3/4) = ln(4/3). Row 1: softmax = [1/2, 1/2], loss ln 2.
    expect(loss).toBeCloseTo((Math.log(4 / 3) + Math.log(2)) / 2, 7);
    // (softmax − one-hot) / batch: row 0 [1/4, −1/4] / 2, row 1 [−1/2, 1/2] / 2.
    expect(dlogits[0]).toBeCloseTo(0.125, 7);
    expect(dlogits[1]).toBeCloseTo(-0.125, 7);
    expect(Array.from(dlogits.subarray(2))).toEqual([-0.25, 0.25]);
  });

  it('is stable for huge logits', async () => {
    const { loss, dlogits } = await cpuKernels.softmaxCrossEntropy(
      f32([1000, 0, -1000]),
      Uint8Array.of(0),
      1,
      3,
    );
    expect(loss).toBe(0);
    expect(Array.from(dlogits)).toEqual([0, 0, 0]);
    const wrong = await cpuKernels.softmaxCrossEntropy(f32([1000, 0]), Uint8Array.of(1), 1, 2);
    expect(wrong.loss).toBe(1000);
  });

  it('rejects a label out of range, naming the row', async () => {
    await expect(
      cpuKernels.softmaxCrossEntropy(f32([0, 0, 0, 0]), Uint8Array.of(0, 2), 2, 2),
    ).rejects.toThrow(/labels\[1\] is 2, outside \[0, 2\)/);
    await expect(cpuKernels.softmaxCrossEntropy(f32([0, 0]), Uint8Array.of(0, 0), 2, 2)).rejects.toThrow(
      /logits length 2/,
    );
  });
});

describe('sgdStep', () => {
  it('momentum and the proximal term by hand', async () => {
    const w = f32([1, 2]);
    const grad = f32([0.5, -1]);
    const velocity = f32([0.25, 0]);
    const anchor = f32([0, 2]);
    const got = await cpuKernels.sgdStep(w, grad, velocity, anchor, 0.5, 0.5, 0.25);
    // i = 0: g' = 0.5 + 0.25·(1 − 0) = 0.75; v = 0.5·0.25 + 0.75 = 0.875; w = 1 − 0.5·0.875 = 0.5625.
    // i = 1: g' = −1 + 0.25·(2 − 2) = −1;   v = 0 − 1 = −1;               w = 2 + 0.5 = 2.5.
    expect(Array.from(got.velocity)).toEqual([0.875, -1]);
    expect(Array.from(got.w)).toEqual([0.5625, 2.5]);
    expect(Array.from(w)).toEqual([1, 2]); // inputs untouched
    expect(Array.from(velocity)).toEqual([0.25, 0]);
  });

  it('plain SGD when β = μ = 0', async () => {
    const got = await cpuKernels.sgdStep(f32([1]), f32([2]), f32([7]), f32([0]), 0.25, 0, 0);
    expect(Array.from(got.w)).toEqual([0.5]);
    expect(Array.from(got.velocity)).toEqual([2]);
  });

  it('rejects bad hyper-parameters and lengths, naming them', async () => {
    const one = f32([1]);
    await expect(cpuKernels.sgdStep(one, one, one, one, 0, 0, 0)).rejects.toThrow(/learningRate/);
    await expect(cpuKernels.sgdStep(one, one, one, one, 0.1, 1, 0)).rejects.toThrow(/momentum .*\[0, 1\)/);
    await expect(cpuKernels.sgdStep(one, one, one, one, 0.1, 0, -1)).rejects.toThrow(/mu/);
    await expect(cpuKernels.sgdStep(one, f32([1, 2]), one, one, 0.1, 0, 0)).rejects.toThrow(
      /grad length 2, w expects 1/,
    );
  });
});

/** Float64 mean cross-entropy of an MLP (ReLU hidden layers), the reference for the gradient check. */
function referenceLoss(layers: readonly number[], p: Float64Array, data: Dataset): number {
  let total = 0;
  for (let r = 0; r < data.count; r++) {
    let a = Array.from(data.features.subarray(r * data.featureCount, (r + 1) * data.featureCount));
    let offset = 0;
    for (let l = 0; l + 1 < layers.length; l++) {
      const inputs = layers[l]!;
      const outputs = layers[l + 1]!;
      const z: number[] = [];
      for (let o = 0; o < outputs; o++) {
        let s = p[offset + inputs * outputs + o]!;
        for (let i = 0; i < inputs; i++) s += p[offset + o * inputs + i]! * a[i]!;
        z.push(s);
      }
      offset += inputs * outputs + outputs;
      a = l + 2 < layers.length ? z.map((v) => Math.max(v, 0)) : z;
    }
    const max = Math.max(...a);
    const logSum = Math.log(a.reduce((s, v) => s + Math.exp(v - max), 0)) + max;
    total += logSum - a[data.labels[r]!]!;
  }
  return total / data.count;
}

describe('whole-model gradient', () => {
  for (const [name, zeroFraction] of [
    ['dense inputs', 0],
    ['sparse inputs (indexed loops)', 0.7],
  ] as const) {
    it(`matches float64 central differences on a 3-layer MLP (${name})`, () => {
      const spec = mlp(6, [5, 4], 3);
      const layout = modelLayout(spec);
      const next = rng(zeroFraction === 0 ? 3 : 4);
      const w = initParameters(spec, 42);
      for (const layer of layout.layers) {
        for (let o = 0; o < layer.outputs; o++) w[layer.biasOffset + o] = (next() - 0.5) * 0.2;
      }
      const count = 7;
      const data: Dataset = {
        features: new Float32Array(count * 6).map(() => (next() < zeroFraction ? 0 : next() * 2 - 1)),
        labels: new Uint8Array(count).map(() => Math.floor(next() * 3)),
        count,
        featureCount: 6,
        classCount: 3,
      };
      const ws = createMlpWorkspace(layout, count, true);
      loadBatch(ws, data, null, 0, count);
      forwardBatch(ws, w, count);
      const lossSum = backwardBatch(ws, w, count);
      const p = Float64Array.from(w);
      const widths = denseWidths(spec)!;
      expect(lossSum / count).toBeCloseTo(referenceLoss(widths, p, data), 5);
      const h = 1e-6;
      let worst = 0;
      for (let k = 0; k < p.length; k++) {
        const saved = p[k]!;
        p[k] = saved + h;
        const up = referenceLoss(widths, p, data);
        p[k] = saved - h;
        const down = referenceLoss(widths, p, data);
        p[k] = saved;
        const numeric = (up - down) / (2 * h);
        const analytic = ws.grad[k]!;
        const error = Math.abs(analytic - numeric) / Math.max(Math.abs(analytic) + Math.abs(numeric), 1e-3);
        worst = Math.max(worst, error);
      }
      expect(worst).toBeLessThan(1e-3);
    });
  }
});
