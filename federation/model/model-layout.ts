import { InvalidArgumentError } from '../../src/errors/index.ts';
import { LAYER_TYPES, MAX_ACTIVATIONS, MAX_FILTERS, MAX_WIDTH, MAX_WINDOW } from './layer-types.ts';
import type { LayerSpec, ModelSpec } from './model-spec.ts';

/** One parameterized layer's (dense or conv2d) slice of the flat parameter vector. */
export interface LayerSlice {
  readonly kind: 'dense' | 'conv2d';
  /** Index of the layer in `spec.layers`. */
  readonly layerIndex: number;
  /** Fan-in: the input width for dense, channels·kernel·kernel for conv2d. */
  readonly inputs: number;
  /** Units (dense) or filters (conv2d). */
  readonly outputs: number;
  /**
   * W's shape as PyTorch stores it: [outputs, inputs] (`nn.Linear`) or [filters, channels, kernel,
   * kernel] (`nn.Conv2d`); either way `outputs × inputs` values, row-major.
   */
  readonly weightShape: readonly number[];
  /** Offset of W: W[o][i] at weightOffset + o·inputs + i (i in PyTorch's order for conv2d). */
  readonly weightOffset: number;
  /** Offset of the bias b[outputs], right after W. */
  readonly biasOffset: number;
}

/** One layer of a model as it runs: what it receives and produces per sample. */
export interface ModelOp {
  readonly layer: LayerSpec;
  /** Index of the layer in `spec.layers`. */
  readonly layerIndex: number;
  /** Per-sample input shape: [features] or [channels, height, width]. */
  readonly inputShape: readonly number[];
  /** Per-sample output shape. */
  readonly outputShape: readonly number[];
  /** Values in one sample's input (the product of `inputShape`). */
  readonly inputSize: number;
  /** Values in one sample's output (the product of `outputShape`). */
  readonly outputSize: number;
  /** The layer's parameters for dense and conv2d, else null. */
  readonly slice: LayerSlice | null;
}

/**
 * Flat parameter layout: parameterized layer by parameterized layer, each one's W (PyTorch's
 * shape, row-major) then its bias; `parameterCount` is the total length. Every engine, the codec
 * and the strategies use this one layout, so a Float32Array of parameters means the same thing
 * everywhere.
 */
export interface ModelLayout {
  /** The parameterized layers (dense, conv2d) in order. */
  readonly layers: readonly LayerSlice[];
  /** Every layer of the spec in order, with its shapes. */
  readonly ops: readonly ModelOp[];
  readonly parameterCount: number;
  /** The spec's per-sample input shape. */
  readonly input: readonly number[];
  /** Values per input sample (the product of `input`): a data set's `featureCount`. */
  readonly inputSize: number;
  /** Classes: the units of the last dense layer. */
  readonly classes: number;
}

const product = (shape: readonly number[]): number => shape.reduce((a, d) => a * d, 1);

function fail(message: string, name: string): never {
  throw new InvalidArgumentError(message, { details: { name } });
}

/** Throws unless `value` is an integer in [1, max], naming `name`. */
function assertCount(name: string, value: unknown, max: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    fail(`${name} is ${String(value)}, must be an integer in [1, ${max}]`, name);
  }
}

/** `model.layers[3] (conv2d)` for messages. */
const label = (path: string, layer: LayerSpec): string => `${path} (${layer.type})`;

/** Throws unless `shape` is [channels, height, width] where a conv2d or maxpool2d layer needs it. */
function assertImage(path: string, layer: LayerSpec, shape: readonly number[]): [number, number, number] {
  if (shape.length !== 3) {
    fail(`${label(path, layer)} needs a [channels, height, width] input, got [${shape.join(', ')}]`, path);
  }
  return [shape[0]!, shape[1]!, shape[2]!];
}

/**
 * The flat layout of `spec` (see {@link ModelLayout}) with every layer's shapes, checking the spec
 * on the way. `name` prefixes the paths in messages (`model.layers[2].kernel`).
 *
 * @throws InvalidArgumentError naming the bad field: an input that is not [features] or
 *   [channels, height, width] of integers in [1, 2^20]; an unknown layer type; units, filters,
 *   kernel or size out of range; padding other than 'same'/'valid'; an even kernel with 'same'
 *   padding; a conv2d or maxpool2d on a flat input, or with a window larger than its input; a
 *   softmax before the last layer; a last layer (before an optional softmax) that is not dense
 *   with at least 2 units; more than 2^26 values per sample anywhere.
 */
export function modelLayout(spec: ModelSpec, name = 'model'): ModelLayout {
  if (typeof spec !== 'object' || spec === null)
    fail(`${name} must be a ModelSpec object, got ${String(spec)}`, name);
  if (typeof spec.name !== 'string')
    fail(`${name}.name must be a string, got ${typeof spec.name}`, `${name}.name`);
  const input = spec.input;
  if (!Array.isArray(input) || (input.length !== 1 && input.length !== 3)) {
    fail(
      `${name}.input must be [features] or [channels, height, width], got ${JSON.stringify(input) ?? String(input)}`,
      `${name}.input`,
    );
  }
  for (const [i, d] of input.entries()) assertCount(`${name}.input[${i}]`, d, MAX_WIDTH);
  if (product(input) > MAX_ACTIVATIONS)
    fail(`${name}.input has more than ${MAX_ACTIVATIONS} values`, `${name}.input`);
  if (!Array.isArray(spec.layers) || spec.layers.length === 0) {
    fail(`${name}.layers must list at least one layer`, `${name}.layers`);
  }

  const layers: LayerSlice[] = [];
  const ops: ModelOp[] = [];
  let shape: readonly number[] = Object.freeze([...input]);
  let offset = 0;
  const last = spec.layers.length - 1;
  spec.layers.forEach((layer: LayerSpec, index) => {
    const path = `${name}.layers[${index}]`;
    if (typeof layer !== 'object' || layer === null)
      fail(`${path} must be a layer object, got ${String(layer)}`, path);
    if (!(LAYER_TYPES as readonly string[]).includes(layer.type)) {
      fail(
        `${path}.type must be one of ${LAYER_TYPES.join(', ')}, got ${JSON.stringify(layer.type)}`,
        `${path}.type`,
      );
    }
    let out: readonly number[] = shape;
    let slice: LayerSlice | null = null;
    const parameterized = (
      kind: LayerSlice['kind'],
      inputs: number,
      outputs: number,
      weightShape: number[],
    ): LayerSlice => {
      const made: LayerSlice = Object.freeze({
        kind,
        layerIndex: index,
        inputs,
        outputs,
        weightShape: Object.freeze(weightShape),
        weightOffset: offset,
        biasOffset: offset + inputs * outputs,
      });
      layers.push(made);
      offset += inputs * outputs + outputs;
      return made;
    };
    switch (layer.type) {
      case 'dense': {
        assertCount(`${path}.units`, layer.units, MAX_WIDTH);
        const inputs = product(shape);
        slice = parameterized('dense', inputs, layer.units, [layer.units, inputs]);
        out = [layer.units];
        break;
      }
      case 'conv2d': {
        const [channels, height, width] = assertImage(path, layer, shape);
        assertCount(`${path}.filters`, layer.filters, MAX_FILTERS);
        assertCount(`${path}.kernel`, layer.kernel, MAX_WINDOW);
        const { filters, kernel, padding } = layer;
        if (padding !== 'same' && padding !== 'valid') {
          fail(
            `${path}.padding must be 'same' or 'valid', got ${JSON.stringify(padding)}`,
            `${path}.padding`,
          );
        }
        if (padding === 'same' && kernel % 2 === 0) {
          fail(`${path}.kernel must be odd for 'same' padding, got ${kernel}`, `${path}.kernel`);
        }
        if (padding === 'valid' && (kernel > height || kernel > width)) {
          fail(`${path}.kernel ${kernel} is larger than its ${height}×${width} input`, `${path}.kernel`);
        }
        const pad = padding === 'same' ? (kernel - 1) / 2 : 0;
        slice = parameterized('conv2d', channels * kernel * kernel, filters, [
          filters,
          channels,
          kernel,
          kernel,
        ]);
        out = [filters, height + 2 * pad - kernel + 1, width + 2 * pad - kernel + 1];
        break;
      }
      case 'maxpool2d': {
        const [channels, height, width] = assertImage(path, layer, shape);
        assertCount(`${path}.size`, layer.size, MAX_WINDOW);
        if (layer.size > height || layer.size > width) {
          fail(`${path}.size ${layer.size} is larger than its ${height}×${width} input`, `${path}.size`);
        }
        out = [channels, Math.floor(height / layer.size), Math.floor(width / layer.size)];
        break;
      }
      case 'flatten':
        out = [product(shape)];
        break;
      case 'relu':
        break;
      case 'softmax':
        if (index !== last) fail(`${label(path, layer)} must be the last layer`, path);
        break;
    }
    if (product(out) > MAX_ACTIVATIONS) {
      fail(`${label(path, layer)} outputs [${out.join(', ')}], more than ${MAX_ACTIVATIONS} values`, path);
    }
    out = Object.freeze([...out]);
    ops.push(
      Object.freeze({
        layer,
        layerIndex: index,
        inputShape: shape,
        outputShape: out,
        inputSize: product(shape),
        outputSize: product(out),
        slice,
      }),
    );
    shape = out;
  });

  const logitsIndex = spec.layers[last]!.type === 'softmax' ? last - 1 : last;
  const logits = spec.layers[logitsIndex];
  if (logits?.type !== 'dense' || logits.units < 2) {
    fail(
      `${name}'s last layer (before an optional softmax) must be a dense layer of at least 2 units (the class logits), got ${logits === undefined ? 'none' : logits.type === 'dense' ? `dense ${logits.units}` : logits.type}`,
      `${name}.layers`,
    );
  }
  if (offset > 2 ** 31 - 1) fail(`${name} has ${offset} parameters, more than 2^31 − 1`, `${name}.layers`);
  return Object.freeze({
    layers: Object.freeze(layers),
    ops: Object.freeze(ops),
    parameterCount: offset,
    input: ops[0]!.inputShape,
    inputSize: product(input),
    classes: logits.units,
  });
}

/** Throws `INVALID_ARGUMENT` naming the bad field of `spec` (see {@link modelLayout}). */
export function assertModelSpec(spec: ModelSpec, name = 'model'): void {
  modelLayout(spec, name);
}

/** Total parameters of `spec`. */
export function parameterCount(spec: ModelSpec): number {
  return modelLayout(spec).parameterCount;
}
