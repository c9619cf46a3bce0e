import type { Conv2dShape, Kernels, PoolShape } from '../engine/index.ts';
import {
  type Conv2dGeometry,
  conv2dBackwardInto,
  conv2dForwardInto,
  conv2dGeometry,
  createConv2dScratch,
} from './conv2d.ts';
import { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
import {
  assertConv2dShape,
  assertDenseShape,
  assertKernelArray,
  assertPoolArgmax,
  assertPoolShape,
  assertSgdStepInputs,
  assertSoftmaxInputs,
} from './kernel-inputs.ts';
import { maxPoolBackwardInto, maxPoolForwardInto } from './max-pool.ts';
import { createNonZeroRows, indexNonZero, SPARSE_DENSITY_LIMIT } from './non-zero-rows.ts';
import { reluBackwardInto, reluInto } from './relu.ts';
import { sgdStepInto } from './sgd-step.ts';
import { softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';

/**
 * The CPU engine's {@link Kernels}: validating wrappers (lengths named, finiteness checked,
 * outputs freshly allocated) around the very loops `train` and `evaluate` run, so testing a
 * kernel tests the trainer's code. Errors are rejections of the returned promise.
 */
export const cpuKernels: Kernels = Object.freeze({
  async denseForward(
    x: Float32Array,
    w: Float32Array,
    b: Float32Array,
    batch: number,
    inputs: number,
    outputs: number,
  ): Promise<Float32Array> {
    assertDenseShape(batch, inputs, outputs);
    const shape = `batch ${batch} × inputs ${inputs}`;
    assertKernelArray('x', x, batch * inputs, shape);
    assertKernelArray('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
    assertKernelArray('b', b, outputs, `outputs ${outputs}`);
    const y = new Float32Array(batch * outputs);
    const rows = createNonZeroRows(batch, inputs);
    const sparse = indexNonZero(x, batch, inputs, rows) < SPARSE_DENSITY_LIMIT.forward * batch * inputs;
    denseForwardInto(x, w, 0, b, 0, y, batch, inputs, outputs, sparse ? rows : null);
    return y;
  },

  async denseBackward(
    x: Float32Array,
    w: Float32Array,
    dy: Float32Array,
    batch: number,
    inputs: number,
    outputs: number,
  ): Promise<{ dx: Float32Array; dw: Float32Array; db: Float32Array }> {
    assertDenseShape(batch, inputs, outputs);
    assertKernelArray('x', x, batch * inputs, `batch ${batch} × inputs ${inputs}`);
    assertKernelArray('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
    assertKernelArray('dy', dy, batch * outputs, `batch ${batch} × outputs ${outputs}`);
    const dx = new Float32Array(batch * inputs);
    const dw = new Float32Array(outputs * inputs);
    const db = new Float32Array(outputs);
    const dyRows = createNonZeroRows(batch, outputs);
    indexNonZero(dy, batch, outputs, dyRows);
    denseBackwardInputInto(w, 0, dy, dyRows, dx, batch, inputs, outputs);
    const xRows = createNonZeroRows(batch, inputs);
    const sparse =
      indexNonZero(x, batch, inputs, xRows) < SPARSE_DENSITY_LIMIT.weightGradient * batch * inputs;
    denseWeightGradientInto(x, sparse ? xRows : null, dy, dw, 0, db, 0, batch, inputs, outputs);
    return { dx, dw, db };
  },

  async conv2dForward(
    x: Float32Array,
    w: Float32Array,
    b: Float32Array,
    shape: Conv2dShape,
  ): Promise<Float32Array> {
    const g = validConv2d(shape, x, w);
    assertKernelArray('b', b, g.filters, `shape.filters ${g.filters}`);
    const y = new Float32Array(shape.batch * g.filters * g.positions);
    conv2dForwardInto(x, w, 0, b, 0, y, shape.batch, createConv2dScratch(g, shape.batch, false));
    return y;
  },

  async conv2dBackward(
    x: Float32Array,
    w: Float32Array,
    dy: Float32Array,
    shape: Conv2dShape,
  ): Promise<{ dx: Float32Array; dw: Float32Array; db: Float32Array }> {
    const g = validConv2d(shape, x, w);
    const { batch } = shape;
    assertKernelArray(
      'dy',
      dy,
      batch * g.filters * g.positions,
      `batch ${batch} × filters ${g.filters} × ${g.outHeight} × ${g.outWidth}`,
    );
    const dx = new Float32Array(x.length);
    const dw = new Float32Array(w.length);
    const db = new Float32Array(g.filters);
    conv2dBackwardInto(x, w, 0, dy, dx, dw, 0, db, 0, batch, createConv2dScratch(g, batch, true));
    return { dx, dw, db };
  },

  async maxPoolForward(x: Float32Array, shape: PoolShape): Promise<{ y: Float32Array; argmax: Uint32Array }> {
    const { outHeight, outWidth } = assertPoolShape(shape);
    const { batch, channels, height, width, size } = shape;
    assertKernelArray('x', x, batch * channels * height * width, poolInput(shape));
    const outputs = batch * channels * outHeight * outWidth;
    const y = new Float32Array(outputs);
    const argmax = new Uint32Array(outputs);
    maxPoolForwardInto(x, y, argmax, batch, channels, height, width, size);
    return { y, argmax };
  },

  async maxPoolBackward(dy: Float32Array, argmax: Uint32Array, shape: PoolShape): Promise<Float32Array> {
    const size = assertPoolShape(shape);
    const { batch, channels, height, width } = shape;
    const outputs = batch * channels * size.outHeight * size.outWidth;
    assertKernelArray(
      'dy',
      dy,
      outputs,
      `batch ${batch} × channels ${channels} × ${size.outHeight} × ${size.outWidth}`,
    );
    assertPoolArgmax(argmax, shape, size);
    const inputs = batch * channels * height * width;
    const dx = new Float32Array(inputs);
    maxPoolBackwardInto(dy, argmax, dx, outputs, inputs);
    return dx;
  },

  async relu(x: Float32Array): Promise<Float32Array> {
    const n = x instanceof Float32Array ? x.length : -1;
    assertKernelArray('x', x, n, 'itself');
    const a = new Float32Array(n);
    reluInto(x, a, n);
    return a;
  },

  async reluBackward(x: Float32Array, dy: Float32Array): Promise<Float32Array> {
    const n = x instanceof Float32Array ? x.length : -1;
    assertKernelArray('x', x, n, 'itself');
    assertKernelArray('dy', dy, n, 'x');
    const dx = new Float32Array(n);
    reluBackwardInto(x, dy, dx, n);
    return dx;
  },

  async softmaxCrossEntropy(
    logits: Float32Array,
    labels: Uint8Array,
    batch: number,
    classes: number,
  ): Promise<{ loss: number; dlogits: Float32Array }> {
    assertSoftmaxInputs(logits, labels, batch, classes);
    const dlogits = new Float32Array(batch * classes);
    const sum = softmaxCrossEntropyInto(logits, labels, batch, classes, dlogits, 1 / batch);
    return { loss: sum / batch, dlogits };
  },

  async sgdStep(
    w: Float32Array,
    grad: Float32Array,
    velocity: Float32Array,
    anchor: Float32Array,
    learningRate: number,
    momentum: number,
    mu: number,
  ): Promise<{ w: Float32Array; velocity: Float32Array }> {
    const n = assertSgdStepInputs(w, grad, velocity, anchor, learningRate, momentum, mu);
    const nextW = new Float32Array(w);
    const nextVelocity = new Float32Array(velocity);
    sgdStepInto(nextW, grad, nextVelocity, anchor, learningRate, momentum, mu, n);
    return { w: nextW, velocity: nextVelocity };
  },
});

/** Checks a convolution's shape, x and w; returns its geometry. */
function validConv2d(shape: Conv2dShape, x: Float32Array, w: Float32Array): Conv2dGeometry {
  assertConv2dShape(shape);
  const { batch, channels, height, width, filters, kernel, padding } = shape;
  assertKernelArray(
    'x',
    x,
    batch * channels * height * width,
    `batch ${batch} × channels ${channels} × height ${height} × width ${width}`,
  );
  assertKernelArray(
    'w',
    w,
    filters * channels * kernel * kernel,
    `filters ${filters} × channels ${channels} × kernel ${kernel} × ${kernel}`,
  );
  return conv2dGeometry(channels, height, width, filters, kernel, padding);
}

/** "batch 2 × channels 3 × height 4 × width 4" for messages. */
function poolInput(shape: PoolShape): string {
  return `batch ${shape.batch} × channels ${shape.channels} × height ${shape.height} × width ${shape.width}`;
}
