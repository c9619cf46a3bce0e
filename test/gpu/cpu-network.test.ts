import { describe, expect, it } from 'vitest';
import {
  defineModel,
  denseWidths,
  initParameters,
  type LayerSpec,
  type ModelSpec,
  mlp,
  modelLayout,
} from '../../federation/index.ts';
import { createCpuEngine, createMlpPass, createNetworkPass, sgdStepInto } from '../../gpu/cpu/index.ts';
import { batchOrder, type Dataset, type TrainConfig } from '../../gpu/index.ts';
import { abortOnLook } from './abort-on-look.ts';

/** Deterministic pseudo-random numbers in [0, 1) (LCG), so fixtures never change. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Float64 logits of one sample, straight from the definitions, reading parameters from `p`. */
function referenceLogits(spec: ModelSpec, p: Float64Array, sample: ArrayLike<number>): number[] {
  const layout = modelLayout(spec);
  let a = Array.from(sample);
  for (const op of layout.ops) {
    const layer = op.layer;
    const slice = op.slice;
    if (layer.type === 'dense') {
      const { inputs, outputs, weightOffset, biasOffset } = slice!;
      const z: number[] = [];
      for (let o = 0; o < outputs; o++) {
        let s = p[biasOffset + o]!;
        for (let i = 0; i < inputs; i++) s += p[weightOffset + o * inputs + i]! * a[i]!;
        z.push(s);
      }
      a = z;
    } else if (layer.type === 'conv2d') {
      const [c, h, w] = op.inputShape as [number, number, number];
      const [f, oh, ow] = op.outputShape as [number, number, number];
      const k = layer.kernel;
      const pad = layer.padding === 'same' ? (k - 1) / 2 : 0;
      const z: number[] = [];
      for (let fi = 0; fi < f; fi++) {
        for (let oy = 0; oy < oh; oy++) {
          for (let ox = 0; ox < ow; ox++) {
            let s = p[slice!.biasOffset + fi]!;
            for (let ci = 0; ci < c; ci++) {
              for (let ki = 0; ki < k; ki++) {
                for (let kj = 0; kj < k; kj++) {
                  const iy = oy + ki - pad;
                  const ix = ox + kj - pad;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  s +=
                    p[slice!.weightOffset + ((fi * c + ci) * k + ki) * k + kj]! * a[(ci * h + iy) * w + ix]!;
                }
              }
            }
            z.push(s);
          }
        }
      }
      a = z;
    } else if (layer.type === 'maxpool2d') {
      const [c, h, w] = op.inputShape as [number, number, number];
      const [, oh, ow] = op.outputShape as [number, number, number];
      const z: number[] = [];
      for (let ci = 0; ci < c; ci++) {
        for (let oy = 0; oy < oh; oy++) {
          for (let ox = 0; ox < ow; ox++) {
            let m = Number.NEGATIVE_INFINITY;
            for (let ky = 0; ky < layer.size; ky++) {
              for (let kx = 0; kx < layer.size; kx++) {
                m = Math.max(m, a[(ci * h + oy * layer.size + ky) * w + ox * layer.size + kx]!);
              }
            }
            z.push(m);
          }
        }
      }
      a = z;
    } else if (layer.type === 'relu') {
      a = a.map((v) => Math.max(v, 0));
    }
    // flatten: same values in the same (CHW) order; softmax: the loss takes the logits.
  }
  return a;
}

/** Float64 mean softmax cross-entropy of `spec` with parameters `p` on every row of `data`. */
function referenceLoss(spec: ModelSpec, p: Float64Array, data: Dataset): number {
  let total = 0;
  for (let r = 0; r < data.count; r++) {
    const z = referenceLogits(
      spec,
      p,
      data.features.subarray(r * data.featureCount, (r + 1) * data.featureCount),
    );
    const max = Math.max(...z);
    total += Math.log(z.reduce((s, v) => s + Math.exp(v - max), 0)) + max - z[data.labels[r]!]!;
  }
  return total / data.count;
}

function randomData(spec: ModelSpec, count: number, seed: number, zeroFraction = 0): Dataset {
  const next = rng(seed);
  const layout = modelLayout(spec);
  const featureCount = layout.inputSize;
  return {
    features: new Float32Array(count * featureCount).map(() => (next() < zeroFraction ? 0 : next() * 2 - 1)),
    labels: new Uint8Array(count).map(() => Math.floor(next() * layout.classes)),
    count,
    featureCount,
    classCount: layout.classes,
  };
}

/** Parameters from `initParameters` with small random biases, so no bias is trivially zero. */
function parameters(spec: ModelSpec, seed: number): Float32Array {
  const w = initParameters(spec, seed);
  const next = rng(seed + 1);
  for (const layer of modelLayout(spec).layers) {
    for (let o = 0; o < layer.outputs; o++) w[layer.biasOffset + o] = (next() - 0.5) * 0.2;
  }
  return w;
}

/** Full-batch gradient of the generic pass and its loss sum. */
function networkGradient(
  spec: ModelSpec,
  w: Float32Array,
  data: Dataset,
): { grad: Float32Array; loss: number } {
  const pass = createNetworkPass(modelLayout(spec), data.count, true);
  pass.load(data, null, 0, data.count);
  pass.forward(w, data.count);
  const loss = pass.backward(w, data.count);
  return { grad: pass.grad.slice(), loss };
}

const TINY_CNN: readonly LayerSpec[] = [
  { type: 'conv2d', filters: 3, kernel: 3, padding: 'same' },
  { type: 'relu' },
  { type: 'maxpool2d', size: 2 },
  { type: 'conv2d', filters: 4, kernel: 2, padding: 'valid' },
  { type: 'relu' },
  { type: 'flatten' },
  { type: 'dense', units: 5 },
  { type: 'relu' },
  { type: 'dense', units: 3 },
  { type: 'softmax' },
];

describe('generic network pass: gradients', () => {
  const cases: [string, ModelSpec, number][] = [
    ['conv same → pool → conv valid → flatten → dense → dense', defineModel('tiny', [2, 6, 5], TINY_CNN), 0],
    [
      'sparse input, a pool dropping a row and column, dense on an image (implicit flatten)',
      defineModel(
        'tiny2',
        [1, 5, 5],
        [
          { type: 'conv2d', filters: 2, kernel: 3, padding: 'valid' },
          { type: 'maxpool2d', size: 2 },
          { type: 'relu' },
          { type: 'dense', units: 3 },
        ],
      ),
      0.6,
    ],
    [
      'a ReLU first and two dense layers without one between them',
      defineModel('odd', [6], [{ type: 'relu' }, { type: 'dense', units: 4 }, { type: 'dense', units: 3 }]),
      0,
    ],
  ];
  for (const [name, spec, zeroFraction] of cases) {
    it(`matches float64 central differences: ${name}`, () => {
      expect(denseWidths(spec)).toBeNull();
      const data = randomData(spec, 4, 7, zeroFraction);
      const w = parameters(spec, 11);
      const { grad, loss } = networkGradient(spec, w, data);
      const p = Float64Array.from(w);
      expect(loss / data.count).toBeCloseTo(referenceLoss(spec, p, data), 5);
      const h = 1e-6;
      let worst = 0;
      for (let k = 0; k < p.length; k++) {
        const saved = p[k]!;
        p[k] = saved + h;
        const up = referenceLoss(spec, p, data);
        p[k] = saved - h;
        const down = referenceLoss(spec, p, data);
        p[k] = saved;
        const numeric = (up - down) / (2 * h);
        const analytic = grad[k]!;
        worst = Math.max(
          worst,
          Math.abs(analytic - numeric) / Math.max(Math.abs(analytic) + Math.abs(numeric), 1e-3),
        );
      }
      expect(worst).toBeLessThan(1e-3);
    });
  }

  it('agrees with the MLP fast path on an MLP', () => {
    const spec = mlp(6, [5, 4], 3);
    const data = randomData(spec, 7, 3, 0.5);
    const w = parameters(spec, 5);
    const mlpPass = createMlpPass(modelLayout(spec), 7, true);
    mlpPass.load(data, null, 0, 7);
    const logits = mlpPass.forward(w, 7).slice();
    const loss = mlpPass.backward(w, 7);
    const generic = createNetworkPass(modelLayout(spec), 7, true);
    generic.load(data, null, 0, 7);
    const genericLogits = generic.forward(w, 7);
    expect(generic.backward(w, 7)).toBeCloseTo(loss, 12);
    for (let i = 0; i < logits.length; i++) expect(genericLogits[i]).toBeCloseTo(logits[i]!, 6);
    for (let i = 0; i < w.length; i++) expect(generic.grad[i]).toBeCloseTo(mlpPass.grad[i]!, 6);
  });
});

/** 1×8×8 images of a horizontal (class 0) or vertical (class 1) bar at a random place, with noise. */
function bars(count: number, seed: number): Dataset {
  const next = rng(seed);
  const features = new Float32Array(count * 64);
  const labels = new Uint8Array(count);
  for (let r = 0; r < count; r++) {
    const label = r % 2;
    const at = Math.floor(next() * 8);
    for (let y = 0; y < 8; y++) {
      for (let x = 0; x < 8; x++) {
        const on = label === 0 ? y === at : x === at;
        features[r * 64 + y * 8 + x] = (on ? 1 : 0) + (next() - 0.5) * 0.2;
      }
    }
    labels[r] = label;
  }
  return { features, labels, count, featureCount: 64, classCount: 2 };
}

const BARS_CNN = defineModel(
  'bars',
  [1, 8, 8],
  [
    { type: 'conv2d', filters: 4, kernel: 3, padding: 'same' },
    { type: 'relu' },
    { type: 'maxpool2d', size: 2 },
    { type: 'flatten' },
    { type: 'dense', units: 2 },
    { type: 'softmax' },
  ],
);

const CONFIG: TrainConfig = {
  learningRate: 0.05,
  momentum: 0.5,
  batchSize: 10,
  epochs: 4,
  proximalMu: 0,
  shuffleSeed: 3,
};

function same(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

describe('createCpuEngine on a CNN', () => {
  const engine = createCpuEngine();

  it('a small CNN learns bars: loss falls, accuracy on held-out images ≥ 95%', async () => {
    const train = bars(200, 1);
    const test = bars(300, 2); // more than one evaluation batch of 256
    const initial = initParameters(BARS_CNN, 1);
    const before = await engine.evaluate(BARS_CNN, initial, test);
    const first = await engine.train(BARS_CNN, initial, train, { ...CONFIG, epochs: 1 });
    const result = await engine.train(BARS_CNN, initial, train, CONFIG);
    const after = await engine.evaluate(BARS_CNN, result.parameters, test);
    expect(result).toMatchObject({ stopped: 'complete', steps: 80, samples: 800 });
    expect(result.meanLoss).toBeLessThan(first.meanLoss);
    expect(after.loss).toBeLessThan(before.loss * 0.5);
    expect(after.count).toBe(300);
    expect(after.accuracy).toBeGreaterThanOrEqual(0.95);
  });

  it('is deterministic and its first k steps are the loop written out from the pass', async () => {
    const data = bars(25, 3);
    const initial = initParameters(BARS_CNN, 2);
    const config = { ...CONFIG, epochs: 1, proximalMu: 0.1 };
    const a = await engine.train(BARS_CNN, initial, data, config);
    const b = await createCpuEngine().train(BARS_CNN, initial, data, config);
    expect(same(a.parameters, b.parameters)).toBe(true);
    expect(a.meanLoss).toBe(b.meanLoss);

    // Two steps by hand: same batches (batchOrder), forward, backward, one SGD step each.
    const layout = modelLayout(BARS_CNN);
    const pass = createNetworkPass(layout, 10, true);
    const w = new Float32Array(initial);
    const order = batchOrder(25, config.shuffleSeed, 0);
    for (const start of [0, 10]) {
      pass.load(data, order, start, 10);
      pass.forward(w, 10);
      pass.backward(w, 10);
      sgdStepInto(w, pass.grad, pass.velocity, initial, config.learningRate, config.momentum, 0.1, w.length);
    }
    const { signal } = abortOnLook(2);
    const cut = await engine.train(BARS_CNN, initial, data, { ...config, signal });
    expect(cut).toMatchObject({ stopped: 'aborted', steps: 2, samples: 20 });
    expect(same(cut.parameters, w)).toBe(true);
  });

  it('the proximal term keeps the model near its start', async () => {
    const data = bars(60, 4);
    const initial = initParameters(BARS_CNN, 3);
    const config = { ...CONFIG, momentum: 0, learningRate: 0.1, epochs: 3 };
    const free = await engine.train(BARS_CNN, initial, data, config);
    const held = await engine.train(BARS_CNN, initial, data, { ...config, proximalMu: 10 });
    const distance = (x: Float32Array): number =>
      Math.sqrt(x.reduce((s, v, i) => s + (v - initial[i]!) ** 2, 0));
    expect(distance(held.parameters)).toBeLessThan(0.5 * distance(free.parameters));
  });

  it('evaluation lets timers run, and concurrent evaluations do not share buffers', async () => {
    const a = bars(400, 6);
    const b = bars(300, 7);
    const pa = initParameters(BARS_CNN, 4);
    const pb = initParameters(BARS_CNN, 5);
    const aloneA = await engine.evaluate(BARS_CNN, pa, a);
    const aloneB = await engine.evaluate(BARS_CNN, pb, b);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    try {
      const big = {
        ...a,
        features: new Float32Array(40 * a.features.length),
        labels: new Uint8Array(40 * a.count),
      };
      for (let k = 0; k < 40; k++) {
        big.features.set(a.features, k * a.features.length);
        big.labels.set(a.labels, k * a.count);
      }
      const many = await engine.evaluate(BARS_CNN, pa, { ...big, count: 40 * a.count });
      expect(many.accuracy).toBeCloseTo(aloneA.accuracy, 12);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThanOrEqual(2);
    const [ca, cb] = await Promise.all([engine.evaluate(BARS_CNN, pa, a), engine.evaluate(BARS_CNN, pb, b)]);
    expect(ca).toEqual(aloneA);
    expect(cb).toEqual(aloneB);
  });

  it('refuses data whose features do not fit the image input, naming the shape', async () => {
    const data = bars(10, 5);
    const spec = defineModel('wrong', [1, 7, 7], [{ type: 'flatten' }, { type: 'dense', units: 2 }]);
    await expect(engine.train(spec, initParameters(spec, 1), data, CONFIG)).rejects.toThrow(
      /data\.featureCount 64, model wrong \[49-2\] expects 49 \(input \[1, 7, 7\]\)/,
    );
  });
});
