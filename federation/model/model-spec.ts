import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * A feed-forward classifier: dense layers of the given sizes with ReLU between them and softmax
 * cross-entropy at the end. `layers = [inputs, outputs]` is multinomial logistic regression;
 * `[inputs, h1, …, outputs]` is an MLP.
 */
export interface ModelSpec {
  /** Short name for logs and metrics ('logreg', 'mlp', '2nn'). */
  readonly name: string;
  /** Layer widths, input first; at least two entries, each an integer ≥ 1. */
  readonly layers: readonly number[];
}

/** One dense layer's slice of the flat parameter vector. */
export interface LayerSlice {
  readonly inputs: number;
  readonly outputs: number;
  /** Offset of W, stored row-major as [outputs][inputs]: W[o][i] at weightOffset + o·inputs + i. */
  readonly weightOffset: number;
  /** Offset of the bias b[outputs], right after W. */
  readonly biasOffset: number;
}

/**
 * Flat parameter layout: layer by layer, each layer's W ([outputs][inputs], row-major) then its
 * bias; `parameterCount` is the total length. Every engine, the codec and the strategies use this
 * one layout, so a Float32Array of parameters means the same thing everywhere.
 */
export interface ModelLayout {
  readonly layers: readonly LayerSlice[];
  readonly parameterCount: number;
}

/** The FedAvg paper's MNIST "2NN": 784-200-200-10, ReLU (199,210 parameters). */
export const MNIST_2NN: ModelSpec = Object.freeze({
  name: '2nn',
  layers: Object.freeze([784, 200, 200, 10]),
});

/** Multinomial logistic regression over `inputs` features and `classes` classes. */
export function logisticRegression(inputs: number, classes: number): ModelSpec {
  return checked({ name: 'logreg', layers: [inputs, classes] });
}

/** An MLP with the given hidden widths. */
export function mlp(inputs: number, hidden: readonly number[], classes: number): ModelSpec {
  return checked({ name: 'mlp', layers: [inputs, ...hidden, classes] });
}

/** Throws `INVALID_ARGUMENT` naming the bad layer width. */
export function assertModelSpec(spec: ModelSpec): void {
  if (!Array.isArray(spec.layers) || spec.layers.length < 2) {
    throw new InvalidArgumentError(`model.layers must list at least an input and an output width`);
  }
  spec.layers.forEach((w, i) => {
    if (!Number.isInteger(w) || w < 1 || w > 1 << 20) {
      throw new InvalidArgumentError(`model.layers[${i}] is ${w}, must be an integer in [1, 1048576]`);
    }
  });
  if (spec.layers[spec.layers.length - 1]! < 2) {
    throw new InvalidArgumentError('model output width must be at least 2 classes');
  }
}

function checked(spec: ModelSpec): ModelSpec {
  assertModelSpec(spec);
  return Object.freeze({ name: spec.name, layers: Object.freeze([...spec.layers]) });
}

/** The flat layout of `spec` (see {@link ModelLayout}). */
export function modelLayout(spec: ModelSpec): ModelLayout {
  assertModelSpec(spec);
  const layers: LayerSlice[] = [];
  let offset = 0;
  for (let l = 0; l + 1 < spec.layers.length; l++) {
    const inputs = spec.layers[l]!;
    const outputs = spec.layers[l + 1]!;
    layers.push({ inputs, outputs, weightOffset: offset, biasOffset: offset + inputs * outputs });
    offset += inputs * outputs + outputs;
  }
  return { layers, parameterCount: offset };
}

/** Total parameters of `spec`. */
export function parameterCount(spec: ModelSpec): number {
  return modelLayout(spec).parameterCount;
}

/**
 * Throws `INVALID_ARGUMENT` when a parameter vector does not fit the model
 * ("parameters length 1000, model 2nn expects 199210").
 */
export function assertParameters(spec: ModelSpec, parameters: Float32Array, name = 'parameters'): void {
  const expected = parameterCount(spec);
  if (!(parameters instanceof Float32Array) || parameters.length !== expected) {
    throw new InvalidArgumentError(
      `${name} length ${parameters?.length}, model ${spec.name} [${spec.layers.join('-')}] expects ${expected}`,
    );
  }
}
