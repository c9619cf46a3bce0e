import { assertFiniteArray, assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import type { Kernels } from '../engine.ts';
import { assertLearningRate, assertMomentum, assertProximalMu } from './assert-train-config.ts';
import { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
import { createNonZeroRows, indexNonZero, SPARSE_DENSITY_LIMIT } from './non-zero-rows.ts';
import { reluBackwardInto, reluInto } from './relu.ts';
import { sgdStepInto } from './sgd-step.ts';
import { softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';

const MAX_DIMENSION = 1 << 26;

/** Throws `INVALID_ARGUMENT` unless `value` is a Float32Array of `expected` finite values. */
function assertFloat32(name: string, value: unknown, expected: number, what: string): Float32Array {
  if (!(value instanceof Float32Array)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array, got ${String(value)}`, {
      details: { name },
    });
  }
  if (value.length !== expected) {
    throw new InvalidArgumentError(`${name} length ${value.length}, ${what} expects ${expected}`, {
      details: { name, actual: value.length, expected },
    });
  }
  assertFiniteArray(name, value);
  return value;
}

function assertDimension(name: string, value: unknown): asserts value is number {
  assertInteger(name, value, 1, MAX_DIMENSION);
}

function assertShape(batch: number, inputs: number, outputs: number): void {
  assertDimension('batch', batch);
  assertDimension('inputs', inputs);
  assertDimension('outputs', outputs);
  if (batch * Math.max(inputs, outputs) > MAX_DIMENSION || inputs * outputs > MAX_DIMENSION) {
    throw new InvalidArgumentError(
      `shape batch ${batch} × inputs ${inputs} × outputs ${outputs} is too large for one kernel call`,
    );
  }
}

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
    assertShape(batch, inputs, outputs);
    const shape = `batch ${batch} × inputs ${inputs}`;
    assertFloat32('x', x, batch * inputs, shape);
    assertFloat32('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
    assertFloat32('b', b, outputs, `outputs ${outputs}`);
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
    assertShape(batch, inputs, outputs);
    assertFloat32('x', x, batch * inputs, `batch ${batch} × inputs ${inputs}`);
    assertFloat32('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
    assertFloat32('dy', dy, batch * outputs, `batch ${batch} × outputs ${outputs}`);
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

  async relu(x: Float32Array): Promise<Float32Array> {
    const n = x instanceof Float32Array ? x.length : -1;
    assertFloat32('x', x, n, 'itself');
    const a = new Float32Array(n);
    reluInto(x, a, n);
    return a;
  },

  async reluBackward(x: Float32Array, dy: Float32Array): Promise<Float32Array> {
    const n = x instanceof Float32Array ? x.length : -1;
    assertFloat32('x', x, n, 'itself');
    assertFloat32('dy', dy, n, 'x');
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
    assertDimension('batch', batch);
    assertInteger('classes', classes, 1, 256);
    assertFloat32('logits', logits, batch * classes, `batch ${batch} × classes ${classes}`);
    if (!(labels instanceof Uint8Array) || labels.length !== batch) {
      throw new InvalidArgumentError(`labels length ${labels?.length}, batch ${batch} expects ${batch}`, {
        details: { name: 'labels' },
      });
    }
    for (let r = 0; r < batch; r++) {
      if (labels[r]! >= classes) {
        throw new InvalidArgumentError(`labels[${r}] is ${labels[r]}, outside [0, ${classes})`, {
          details: { name: 'labels', index: r },
        });
      }
    }
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
    const n = w instanceof Float32Array ? w.length : -1;
    assertFloat32('w', w, n, 'itself');
    assertFloat32('grad', grad, n, 'w');
    assertFloat32('velocity', velocity, n, 'w');
    assertFloat32('anchor', anchor, n, 'w');
    assertLearningRate('learningRate', learningRate);
    assertMomentum('momentum', momentum);
    assertProximalMu('mu', mu);
    const nextW = new Float32Array(w);
    const nextVelocity = new Float32Array(velocity);
    sgdStepInto(nextW, grad, nextVelocity, anchor, learningRate, momentum, mu, n);
    return { w: nextW, velocity: nextVelocity };
  },
});
