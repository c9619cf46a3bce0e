import { assertFiniteArray, assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import type { Conv2dShape, PoolShape } from '../engine/index.ts';
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

/** Output size of a convolution or pooling: rows and columns of one output plane (both ≥ 1). */
export interface PlaneSize {
  readonly outHeight: number;
  readonly outWidth: number;
}

/** Throws `INVALID_ARGUMENT` unless `value` is a non-null object; `name` is in the message. */
function assertShapeObject(name: string, value: unknown, type: string): void {
  if (typeof value !== 'object' || value === null) {
    throw new InvalidArgumentError(`${name} must be a ${type} object, got ${String(value)}`, {
      details: { name },
    });
  }
}

/** Throws unless the products of a kernel call's dimensions fit one call (≤ 2^26 each). */
function assertProducts(name: string, products: Readonly<Record<string, number>>): void {
  for (const [what, value] of Object.entries(products)) {
    if (value > MAX_DIMENSION) {
      throw new InvalidArgumentError(`${name}: ${what} = ${value} is too large for one kernel call`, {
        details: { name, what, value },
      });
    }
  }
}

/**
 * Checks a {@link Conv2dShape} under `name`, naming the bad field ("shape.kernel must be odd for
 * 'same' padding, got 4"): every dimension an integer in [1, 2^26], padding 'same' (odd kernel) or
 * 'valid' (kernel no larger than the input), and sizes that fit one kernel call.
 *
 * @returns the output plane's size.
 */
export function assertConv2dShape(shape: Conv2dShape, name = 'shape'): PlaneSize {
  assertShapeObject(name, shape, 'Conv2dShape');
  for (const field of ['batch', 'channels', 'height', 'width', 'filters', 'kernel'] as const) {
    assertKernelDimension(`${name}.${field}`, shape[field]);
  }
  const { batch, channels, height, width, filters, kernel, padding } = shape;
  if (padding !== 'same' && padding !== 'valid') {
    throw new InvalidArgumentError(`${name}.padding must be 'same' or 'valid', got ${String(padding)}`, {
      details: { name: `${name}.padding`, value: String(padding) },
    });
  }
  if (padding === 'same' && kernel % 2 === 0) {
    throw new InvalidArgumentError(`${name}.kernel must be odd for 'same' padding, got ${kernel}`, {
      details: { name: `${name}.kernel`, value: kernel },
    });
  }
  if (padding === 'valid' && (kernel > height || kernel > width)) {
    throw new InvalidArgumentError(
      `${name}.kernel ${kernel} is larger than the ${height}×${width} input with 'valid' padding`,
      { details: { name: `${name}.kernel`, value: kernel } },
    );
  }
  const pad = padding === 'same' ? (kernel - 1) / 2 : 0;
  const outHeight = height + 2 * pad - kernel + 1;
  const outWidth = width + 2 * pad - kernel + 1;
  assertProducts(name, {
    batch·channels·height·width: batch * channels * height * width,
    batch·filters·outHeight·outWidth: batch * filters * outHeight * outWidth,
    'filters·channels·kernel²': filters * channels * kernel * kernel,
  });
  return { outHeight, outWidth };
}

/**
 * Checks a {@link PoolShape} under `name`, naming the bad field: every dimension an integer in
 * [1, 2^26], a window no larger than the input, and a size that fits one kernel call.
 *
 * @returns the output plane's size (⌊height/size⌋ × ⌊width/size⌋).
 */
export function assertPoolShape(shape: PoolShape, name = 'shape'): PlaneSize {
  assertShapeObject(name, shape, 'PoolShape');
  for (const field of ['batch', 'channels', 'height', 'width', 'size'] as const) {
    assertKernelDimension(`${name}.${field}`, shape[field]);
  }
  const { batch, channels, height, width, size } = shape;
  if (size > height || size > width) {
    throw new InvalidArgumentError(`${name}.size ${size} is larger than the ${height}×${width} input`, {
      details: { name: `${name}.size`, value: size },
    });
  }
  assertProducts(name, { batch·channels·height·width: batch * channels * height * width });
  return { outHeight: Math.floor(height / size), outWidth: Math.floor(width / size) };
}

/**
 * Checks the `argmax` of `Kernels.maxPoolBackward`: a Uint32Array with one entry per output, each
 * the flat index of an element inside that output's own window (as `maxPoolForward` returns it).
 */
export function assertPoolArgmax(argmax: Uint32Array, shape: PoolShape, size: PlaneSize): void {
  const { batch, channels, height, width } = shape;
  const { outHeight, outWidth } = size;
  const outputs = batch * channels * outHeight * outWidth;
  if (!(argmax instanceof Uint32Array) || argmax.length !== outputs) {
    throw new InvalidArgumentError(
      `argmax must be a Uint32Array of length ${outputs} (batch ${batch} × channels ${channels} × ${outHeight} × ${outWidth}), got ${argmax instanceof Uint32Array ? `length ${argmax.length}` : String(argmax)}`,
      { details: { name: 'argmax' } },
    );
  }
  const s = shape.size;
  let i = 0;
  for (let plane = 0; plane < batch * channels; plane++) {
    for (let oy = 0; oy < outHeight; oy++) {
      for (let ox = 0; ox < outWidth; ox++, i++) {
        const local = argmax[i]! - plane * height * width;
        const iy = Math.floor(local / width);
        const ix = local - iy * width;
        if (local < 0 || iy < oy * s || iy >= (oy + 1) * s || ix < ox * s || ix >= (ox + 1) * s) {
          throw new InvalidArgumentError(`argmax[${i}] is ${argmax[i]}, outside the window of output ${i}`, {
            details: { name: 'argmax', index: i },
          });
        }
      }
    }
  }
}
