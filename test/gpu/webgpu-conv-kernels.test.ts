import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpuKernels as cpu } from '../../gpu/cpu/index.ts';
import type { Conv2dShape, Kernels, PoolShape, TrainingEngine } from '../../gpu/index.ts';
import { createWebGpuEngine } from '../../gpu/webgpu/index.ts';
import { rng } from '../helpers/rng.ts';
import { abs, firstMismatch, randomArray, worst } from './webgpu-compare.ts';

/*
 * The WebGPU convolution and max-pooling kernels against the CPU reference kernels (float64
 * accumulation). Runs on whatever adapter is present (lavapipe in CI); a missing adapter fails the
 * suite, it never skips.
 *
 * Tolerances (GPU sums in float32 in a fixed order; CPU in float64):
 *   conv2d forward, dx, dw, db: |gpu − cpu| ≤ 1e-6 + 1e-5 · Σ|terms| per output, the sum of the
 *     magnitudes of the products summed (the CPU kernel run on |x|, |w|, |dy|). float32 sequential
 *     summation error is below n·2^-24 of it for n terms; the dw/db sums are split into partial
 *     sums of a few output rows each, so n stays in the hundreds even for the MNIST CNN's conv2.
 *   max-pool forward (y and argmax) and backward: exact (no arithmetic; ties to the first maximum).
 */

let gpu: TrainingEngine;
let k: Kernels;

beforeAll(async () => {
  gpu = await createWebGpuEngine({ allowSoftware: true });
  k = gpu.kernels;
});
afterAll(async () => {
  await gpu?.dispose();
});

const conv = (
  batch: number,
  channels: number,
  height: number,
  width: number,
  filters: number,
  kernel: number,
  padding: 'same' | 'valid',
): Conv2dShape => ({ batch, channels, height, width, filters, kernel, padding });

const CONV_SHAPES: [string, Conv2dShape][] = [
  ['1×1 kernel', conv(2, 3, 4, 5, 2, 1, 'valid')],
  ['single channel 3×3 same', conv(1, 1, 5, 5, 1, 3, 'same')],
  ['odd sizes 3×3 valid', conv(3, 3, 7, 9, 4, 3, 'valid')],
  ['5×5 same, 6×5 input', conv(3, 2, 6, 5, 5, 5, 'same')],
  ['valid down to one output', conv(2, 2, 5, 5, 3, 5, 'valid')],
  ['same kernel taller than the input', conv(2, 2, 1, 3, 3, 5, 'same')],
  ['MNIST CNN conv1', conv(2, 1, 28, 28, 32, 5, 'same')],
  ['MNIST CNN conv2', conv(3, 32, 14, 14, 64, 5, 'same')],
];

function convInputs(shape: Conv2dShape, seed: number) {
  const g = shape.padding === 'same' ? (shape.kernel - 1) / 2 : 0;
  const outH = shape.height + 2 * g - shape.kernel + 1;
  const outW = shape.width + 2 * g - shape.kernel + 1;
  const next = rng(seed);
  const { batch, channels, height, width, filters, kernel } = shape;
  return {
    x: randomArray(next, batch * channels * height * width, 1, 0.3),
    w: randomArray(next, filters * channels * kernel * kernel, 0.3),
    b: randomArray(next, filters, 0.5),
    dy: randomArray(next, batch * filters * outH * outW, 0.1, 0.2),
  };
}

describe('conv2d', () => {
  it.each(CONV_SHAPES)('forward matches the CPU (%s)', async (_, shape) => {
    const { x, w, b } = convInputs(shape, shape.batch * 100 + shape.height * 7 + shape.filters);
    const got = await k.conv2dForward(x, w, b, shape);
    const want = await cpu.conv2dForward(x, w, b, shape);
    const magnitude = await cpu.conv2dForward(abs(x), abs(w), abs(b), shape);
    expect(worst(got, want, (i) => 1e-6 + 1e-5 * magnitude[i]!)).toBeNull();
  });

  it.each(CONV_SHAPES)('backward dx, dw, db match the CPU (%s)', async (_, shape) => {
    const { x, w, dy } = convInputs(shape, shape.batch * 31 + shape.width * 17 + shape.kernel);
    const got = await k.conv2dBackward(x, w, dy, shape);
    const want = await cpu.conv2dBackward(x, w, dy, shape);
    const mag = await cpu.conv2dBackward(abs(x), abs(w), abs(dy), shape);
    expect(worst(got.dx, want.dx, (i) => 1e-6 + 1e-5 * mag.dx[i]!)).toBeNull();
    expect(worst(got.dw, want.dw, (i) => 1e-6 + 1e-5 * mag.dw[i]!)).toBeNull();
    expect(worst(got.db, want.db, (i) => 1e-6 + 1e-5 * mag.db[i]!)).toBeNull();
  });

  it('computes a hand-checked example (3×3 same, a corner and the centre)', async () => {
    const shape = conv(1, 1, 3, 3, 1, 3, 'same');
    const x = Float32Array.from({ length: 9 }, (_, i) => i + 1);
    const w = Float32Array.of(0, 0, 0, 0, 1, 1, 0, 1, 0); // centre, right, below
    const y = await k.conv2dForward(x, w, Float32Array.of(0.5), shape);
    expect(y[0]).toBe(1 + 2 + 4 + 0.5);
    expect(y[4]).toBe(5 + 6 + 8 + 0.5);
    expect(y[8]).toBe(9 + 0.5);
  });

  it('uses a 2-D dispatch grid past 65535 workgroups (4.2M outputs)', async () => {
    // 64 invocations a workgroup: 2050² outputs need 65665 workgroups.
    const side = 2050;
    const shape = conv(1, 1, side, side, 1, 1, 'valid');
    const next = rng(77);
    const x = randomArray(next, side * side);
    const dy = randomArray(next, side * side);
    const w = Float32Array.of(-1.5);
    const b = Float32Array.of(0.25);
    const y = await k.conv2dForward(x, w, b, shape);
    const want = await cpu.conv2dForward(x, w, b, shape);
    expect(worst(y, want, (i) => 1e-6 + 1e-5 * (1.5 * Math.abs(x[i]!) + 0.25))).toBeNull();
    // dx = dy·w, a single product: exact.
    const got = await k.conv2dBackward(x, w, dy, shape);
    expect(firstMismatch(got.dx, (await cpu.conv2dBackward(x, w, dy, shape)).dx)).toBe(-1);
  });

  it('rejects a bad shape or length, naming it', async () => {
    const shape = conv(1, 1, 4, 4, 1, 3, 'same');
    await expect(
      k.conv2dForward(new Float32Array(16), new Float32Array(8), new Float32Array(1), shape),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('w length 8') });
    await expect(
      k.conv2dForward(new Float32Array(16), new Float32Array(16), new Float32Array(1), {
        ...shape,
        kernel: 4,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('shape.kernel') });
  });
});

const pool = (batch: number, channels: number, height: number, width: number, size: number): PoolShape => ({
  batch,
  channels,
  height,
  width,
  size,
});

const POOL_SHAPES: [string, PoolShape][] = [
  ['2×2 even', pool(2, 3, 4, 6, 2)],
  ['leftover row and column', pool(3, 2, 7, 5, 2)],
  ['3×3 windows, leftovers', pool(2, 2, 8, 10, 3)],
  ['window the whole input', pool(1, 4, 3, 3, 3)],
  ['size 1', pool(1, 2, 3, 2, 1)],
  ['MNIST CNN pool1', pool(2, 32, 28, 28, 2)],
];

describe('max-pool', () => {
  it.each(POOL_SHAPES)('forward and backward equal the CPU exactly (%s)', async (_, shape) => {
    const next = rng(shape.height * 11 + shape.width * 3 + shape.size);
    const n = shape.batch * shape.channels * shape.height * shape.width;
    // Few distinct values (and ReLU-like zeros), so windows hold ties: the first maximum must win.
    const x = Float32Array.from({ length: n }, () => (next() < 0.3 ? 0 : Math.floor(next() * 4) - 1));
    const got = await k.maxPoolForward(x, shape);
    const want = await cpu.maxPoolForward(x, shape);
    expect(got.y).toEqual(want.y);
    expect(got.argmax).toEqual(want.argmax);
    const dy = randomArray(next, want.y.length);
    expect(await k.maxPoolBackward(dy, want.argmax, shape)).toEqual(
      await cpu.maxPoolBackward(dy, want.argmax, shape),
    );
  });

  it('picks the first of tied maxima in row-major window order', async () => {
    const shape = pool(1, 1, 2, 2, 2);
    const { y, argmax } = await k.maxPoolForward(Float32Array.of(1, 3, 3, 3), shape);
    expect([...y]).toEqual([3]);
    expect([...argmax]).toEqual([1]);
  });

  it('uses a 2-D dispatch grid past 65535 workgroups (4.2M outputs)', async () => {
    const shape = pool(1, 1, 4100, 4100, 2);
    const next = rng(78);
    const x = randomArray(next, 4100 * 4100);
    const got = await k.maxPoolForward(x, shape);
    const want = await cpu.maxPoolForward(x, shape);
    expect(firstMismatch(got.y, want.y)).toBe(-1);
    expect(firstMismatch(got.argmax, want.argmax)).toBe(-1);
    const dy = randomArray(next, want.y.length);
    const dx = await k.maxPoolBackward(dy, want.argmax, shape);
    expect(firstMismatch(dx, await cpu.maxPoolBackward(dy, want.argmax, shape))).toBe(-1);
  });

  it('rejects an argmax outside its window', async () => {
    const shape = pool(1, 1, 4, 4, 2);
    await expect(
      k.maxPoolBackward(new Float32Array(4), Uint32Array.of(0, 2, 8, 15), shape),
    ).resolves.toHaveLength(16);
    await expect(
      k.maxPoolBackward(new Float32Array(4), Uint32Array.of(0, 1, 8, 15), shape),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('argmax[1]') });
  });
});
