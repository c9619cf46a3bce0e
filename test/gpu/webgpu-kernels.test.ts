import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUANT_BITS, quantize } from '../../federation/index.ts';
import { createCpuEngine } from '../../gpu/cpu/index.ts';
import type { Kernels, TrainingEngine } from '../../gpu/index.ts';
import { createWebGpuEngine, type MatmulKind } from '../../gpu/webgpu/index.ts';
import { rng } from '../helpers/rng.ts';

/*
 * Every WebGPU kernel against the CPU reference engine's kernels (float64 accumulation). Runs on
 * whatever adapter is present (lavapipe in CI); a missing adapter fails the suite, it never skips.
 *
 * Tolerances (GPU sums in float32, k ascending; CPU in float64):
 *   dense forward/backward: |gpu − cpu| ≤ 1e-6 + 1e-5 · Σ_k |a_k·b_k| per output (the magnitude of
 *     the terms summed; float32 sequential summation error is below K·2^-24 of it)
 *   ReLU and its backward: exact
 *   softmax cross-entropy: loss relative 1e-5; dlogits absolute 1e-6 (entries are ≤ 1/batch)
 *   SGD step: with T = β|v| + |g| + μ(|w| + |anchor|) (the terms summed), velocity within 1e-6·T,
 *     w within 1e-6·(|w| + η·T)
 *   quantizer: levels identical; residuals within 1 ulp (FMA contraction of ℓ·Δ − C may differ;
 *     lavapipe is bit-identical)
 */

let gpu: TrainingEngine;
let k: Kernels;
/** The same kernels with the other matmul variant (tiled ↔ simple), so both are tested everywhere. */
const matmul: Partial<Record<MatmulKind, Kernels>> = {};
let other: TrainingEngine;
const cpu = createCpuEngine().kernels;

beforeAll(async () => {
  gpu = await createWebGpuEngine({ allowSoftware: true, matmulKernel: 'tiled' });
  other = await createWebGpuEngine({ allowSoftware: true, matmulKernel: 'simple' });
  k = gpu.kernels;
  matmul.tiled = gpu.kernels;
  matmul.simple = other.kernels;
});
afterAll(async () => {
  await gpu?.dispose();
  await other?.dispose();
});

function randomArray(next: () => number, n: number, scale = 1, zeroFraction = 0): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = next() < zeroFraction ? 0 : (next() * 2 - 1) * scale;
  return out;
}

const abs = (a: Float32Array): Float32Array => a.map(Math.abs);

/** Index and size of the worst violation of |a − b| ≤ bound(i), or null. */
function worst(a: Float32Array, b: Float32Array, bound: (i: number) => number): string | null {
  expect(a.length).toBe(b.length);
  let bad: string | null = null;
  let excess = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    const limit = bound(i);
    if (!(d <= limit) && d / limit > excess) {
      excess = d / limit;
      bad = `index ${i}: ${a[i]} vs ${b[i]} (|Δ| ${d}, bound ${limit})`;
    }
  }
  return bad;
}

// Non-multiples of the 16×16 tile, a single row/column, and one multiple.
const SHAPES: [batch: number, inputs: number, outputs: number][] = [
  [1, 1, 2],
  [3, 17, 5],
  [10, 784, 200],
  [16, 32, 16],
  [33, 47, 19],
  [7, 200, 10],
];

const DENSE_CASES = (['tiled', 'simple'] as const).flatMap((kind) =>
  SHAPES.map((s) => [kind, ...s] as const),
);

describe('dense', () => {
  it.each(DENSE_CASES)(
    '%s forward y = x·Wᵀ + b matches the CPU (batch %i, inputs %i, outputs %i)',
    async (kind, batch, inputs, outputs) => {
      const k = matmul[kind]!;
      const next = rng(batch * 1000 + inputs * 7 + outputs);
      const x = randomArray(next, batch * inputs, 1, 0.3);
      const w = randomArray(next, outputs * inputs, 0.2);
      const b = randomArray(next, outputs, 0.5);
      const got = await k.denseForward(x, w, b, batch, inputs, outputs);
      const want = await cpu.denseForward(x, w, b, batch, inputs, outputs);
      const magnitude = await cpu.denseForward(abs(x), abs(w), abs(b), batch, inputs, outputs);
      expect(worst(got, want, (i) => 1e-6 + 1e-5 * magnitude[i]!)).toBeNull();
    },
  );

  it.each(['tiled', 'simple'] as const)('%s forward computes a hand-checked example', async (kind) => {
    const y = await matmul[kind]!.denseForward(
      new Float32Array([1, 2, 3, 4, 5, 6]),
      new Float32Array([1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1]),
      new Float32Array([0.5, 0.5, 0.5, -1]),
      2,
      3,
      4,
    );
    expect([...y]).toEqual([1.5, 2.5, 3.5, 5, 4.5, 5.5, 6.5, 14]);
  });

  it.each(DENSE_CASES)(
    '%s backward dx, dW, db match the CPU (batch %i, inputs %i, outputs %i)',
    async (kind, batch, inputs, outputs) => {
      const k = matmul[kind]!;
      const next = rng(batch * 31 + inputs * 17 + outputs * 5);
      const x = randomArray(next, batch * inputs, 1, 0.3);
      const w = randomArray(next, outputs * inputs, 0.2);
      const dy = randomArray(next, batch * outputs, 0.1, 0.2);
      const got = await k.denseBackward(x, w, dy, batch, inputs, outputs);
      const want = await cpu.denseBackward(x, w, dy, batch, inputs, outputs);
      const mag = await cpu.denseBackward(abs(x), abs(w), abs(dy), batch, inputs, outputs);
      expect(worst(got.dx, want.dx, (i) => 1e-6 + 1e-5 * mag.dx[i]!)).toBeNull();
      expect(worst(got.dw, want.dw, (i) => 1e-6 + 1e-5 * mag.dw[i]!)).toBeNull();
      expect(worst(got.db, want.db, (i) => 1e-6 + 1e-5 * mag.db[i]!)).toBeNull();
    },
  );

  it('rejects mismatched lengths, naming the array', async () => {
    const x = new Float32Array(6);
    await expect(k.denseForward(x, new Float32Array(5), new Float32Array(2), 2, 3, 2)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('w length 5'),
    });
    await expect(
      k.denseForward(new Float32Array([Number.NaN, 0, 0]), new Float32Array(3), new Float32Array(1), 1, 3, 1),
    ).rejects.toMatchObject({ code: 'UPDATE_NON_FINITE' });
  });
});

describe('relu', () => {
  it('forward and backward are exact on 100k values (2D grid boundary included)', async () => {
    const next = rng(5);
    for (const n of [1, 255, 257, 100_003]) {
      const x = randomArray(next, n, 1, 0.05);
      const dy = randomArray(next, n, 1);
      expect(await k.relu(x)).toEqual(await cpu.relu(x));
      expect(await k.reluBackward(x, dy)).toEqual(await cpu.reluBackward(x, dy));
    }
  });
});

describe('softmax cross-entropy', () => {
  it.each([
    [1, 2],
    [10, 10],
    [65, 7],
    [100, 3],
  ])('loss and gradient match the CPU (batch %i, classes %i)', async (batch, classes) => {
    const next = rng(batch * 13 + classes);
    const logits = randomArray(next, batch * classes, 8);
    logits[0] = 80; // large logits must not overflow (max subtraction)
    const labels = Uint8Array.from({ length: batch }, () => Math.floor(next() * classes));
    const got = await k.softmaxCrossEntropy(logits, labels, batch, classes);
    const want = await cpu.softmaxCrossEntropy(logits, labels, batch, classes);
    expect(Math.abs(got.loss - want.loss)).toBeLessThanOrEqual(1e-5 * Math.abs(want.loss));
    expect(worst(got.dlogits, want.dlogits, () => 1e-6)).toBeNull();
  });

  it('rejects a label outside the classes', async () => {
    await expect(k.softmaxCrossEntropy(new Float32Array(4), Uint8Array.of(0, 2), 2, 2)).rejects.toMatchObject(
      {
        code: 'INVALID_ARGUMENT',
        message: expect.stringContaining('labels[1] is 2'),
      },
    );
  });
});

describe('sgd step', () => {
  it.each([
    [0.1, 0, 0],
    [0.05, 0.9, 0],
    [0.01, 0.5, 0.1],
  ])('η %f, β %f, μ %f matches the CPU on 70k parameters', async (lr, beta, mu) => {
    const next = rng(Math.round(lr * 1000 + beta * 100 + mu * 10));
    const n = 70_001;
    const w = randomArray(next, n, 1);
    const grad = randomArray(next, n, 0.5);
    const velocity = randomArray(next, n, 0.5);
    const anchor = randomArray(next, n, 1);
    const got = await k.sgdStep(w, grad, velocity, anchor, lr, beta, mu);
    const want = await cpu.sgdStep(w, grad, velocity, anchor, lr, beta, mu);
    // Bounds scale with the magnitude of the terms summed (β·v and g' may cancel).
    const terms = (i: number) =>
      beta * Math.abs(velocity[i]!) + Math.abs(grad[i]!) + mu * (Math.abs(w[i]!) + Math.abs(anchor[i]!));
    expect(worst(got.velocity, want.velocity, (i) => 1e-6 * terms(i) + 1e-12)).toBeNull();
    expect(worst(got.w, want.w, (i) => 1e-6 * (Math.abs(w[i]!) + lr * terms(i)) + 1e-12)).toBeNull();
  });

  it('rejects momentum 1', async () => {
    const a = new Float32Array(3);
    await expect(k.sgdStep(a, a, a, a, 0.1, 1, 0)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

/** Distance in units in the last place between two float32 values of the same sign (0 when equal). */
function ulps(a: number, b: number): number {
  if (a === b) return 0;
  const ia = new Int32Array(Float32Array.of(a).buffer)[0]!;
  const ib = new Int32Array(Float32Array.of(b).buffer)[0]!;
  return ia < 0 !== ib < 0 ? Number.POSITIVE_INFINITY : Math.abs(ia - ib);
}

describe('error-feedback quantizer', () => {
  const n = 100_000;
  const next = rng(99);
  const update = randomArray(next, n, 0.03);
  const residual = randomArray(next, n, 0.004);
  const seeds = [
    { key0: 0, key1: 0 },
    { key0: 1, key1: 2 },
    { key0: 0xdeadbeef, key1: 0xffffffff },
  ];
  const cases = QUANT_BITS.flatMap((bits) => seeds.map((seed) => [bits, seed] as const));

  it.each(cases)('levels identical to federation/quantize at %i bits, seed %o', async (bits, seed) => {
    for (const [res, counterBase] of [
      [residual, 0],
      [null, 0xffff_ffff - 50_000], // counter wraps mod 2^32 inside the array
    ] as const) {
      const params = { bits, clip: 0.02, seed, counterBase };
      const want = quantize(update, res, params);
      const got = await gpu.quantize(update, res, params);
      let levelMismatch = -1;
      let maxUlps = 0;
      for (let i = 0; i < n; i++) {
        if (got.levels[i] !== want.levels[i] && levelMismatch < 0) levelMismatch = i;
        maxUlps = Math.max(maxUlps, ulps(got.residual[i]!, want.residual[i]!));
      }
      expect(levelMismatch).toBe(-1);
      expect(maxUlps).toBeLessThanOrEqual(1);
    }
  });

  it('refuses non-finite input like the CPU quantizer', async () => {
    const u = Float32Array.of(0, Number.POSITIVE_INFINITY);
    await expect(
      gpu.quantize(u, null, { bits: 2, clip: 1, seed: { key0: 1, key1: 1 } }),
    ).rejects.toMatchObject({
      code: 'UPDATE_NON_FINITE',
      message: expect.stringContaining('update[1]'),
    });
  });
});
