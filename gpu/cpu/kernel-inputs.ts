import { assertFiniteArray, assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { assertLearningRate, assertMomentum, assertProximalMu } from './assert-train-config.ts';

/** Largest kernel dimension (and dimension product) one kernel call accepts. */
const MAX_DIMENSION = 1 << 26;

/*
 * Validation of the `Kernels` API, shared by every engine so all refuse the same inputs with the
 * same messages.
 */

/** Throws `INVALID_ARGUMENT` unless `value` is a Float32Array of `expected` finite values. */
export function assertKernelArray(
  name: string,
  value: unknown,
  expected: number,
  what: string,
): Float32Array {
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

/** Throws `INVALID_ARGUMENT` unless `value` is an integer in [1, 2^26] (a kernel dimension). */
export function assertKernelDimension(name: string, value: unknown): asserts value is number {
  assertInteger(name, value, 1, MAX_DIMENSION);
}

/** Checks a dense layer's shape: each dimension, and products that fit one kernel call. */
export function assertDenseShape(batch: number, inputs: number, outputs: number): void {
  assertKernelDimension('batch', batch);
  assertKernelDimension('inputs', inputs);
  assertKernelDimension('outputs', outputs);
  if (batch * Math.max(inputs, outputs) > MAX_DIMENSION || inputs * outputs > MAX_DIMENSION) {
    throw new InvalidArgumentError(
      `shape batch ${batch} × inputs ${inputs} × outputs ${outputs} is too large for one kernel call`,
    );
  }
}

/** Checks the arguments of `Kernels.sgdStep`; returns the vector length n. */
export function assertSgdStepInputs(
  w: Float32Array,
  grad: Float32Array,
  velocity: Float32Array,
  anchor: Float32Array,
  learningRate: number,
  momentum: number,
  mu: number,
): number {
  const n = w instanceof Float32Array ? w.length : -1;
  assertKernelArray('w', w, n, 'itself');
  assertKernelArray('grad', grad, n, 'w');
  assertKernelArray('velocity', velocity, n, 'w');
  assertKernelArray('anchor', anchor, n, 'w');
  assertLearningRate('learningRate', learningRate);
  assertMomentum('momentum', momentum);
  assertProximalMu('mu', mu);
  return n;
}

/** Checks the arguments of `Kernels.softmaxCrossEntropy`: shape, finite logits, labels in range. */
export function assertSoftmaxInputs(
  logits: Float32Array,
  labels: Uint8Array,
  batch: number,
  classes: number,
): void {
  assertKernelDimension('batch', batch);
  assertInteger('classes', classes, 1, 256);
  assertKernelArray('logits', logits, batch * classes, `batch ${batch} × classes ${classes}`);
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
}
