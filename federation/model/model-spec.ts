import { assertModelSpec } from './model-layout.ts';

/**
 * One layer of a sequential classifier, as a configuration file lists it:
 * - `dense`: a fully connected layer of `units` outputs; on a [channels, height, width] input it
 *   flattens implicitly in CHW order (as `torch.flatten(x, 1)` does);
 * - `conv2d`: `filters` convolutions of `kernel` × `kernel`, stride 1, zero padding 'same' (odd
 *   kernel, output as large as the input) or 'valid' (no padding); needs a [channels, height,
 *   width] input;
 * - `maxpool2d`: max over `size` × `size` windows, stride `size`, trailing rows/columns dropped;
 *   needs a [channels, height, width] input;
 * - `flatten`: [channels, height, width] → [channels·height·width] (a no-op on a flat input);
 * - `relu`: max(x, 0);
 * - `softmax`: allowed only as the last layer, and optional: training always applies softmax
 *   cross-entropy to the last dense layer's outputs (the logits), with or without it.
 */
export type LayerSpec =
  | { readonly type: 'dense'; readonly units: number }
  | {
      readonly type: 'conv2d';
      readonly filters: number;
      readonly kernel: number;
      readonly padding: 'same' | 'valid';
    }
  | { readonly type: 'maxpool2d'; readonly size: number }
  | { readonly type: 'flatten' }
  | { readonly type: 'relu' }
  | { readonly type: 'softmax' };

/**
 * A sequential classifier: `layers` applied in order to one sample of shape `input`, the last
 * (before an optional softmax) a dense layer whose `units` are the class logits (≥ 2), trained
 * with softmax cross-entropy. Parameters live in one flat vector (see `ModelLayout`).
 */
export interface ModelSpec {
  /** Short name for logs and metrics ('logreg', 'mlp', '2nn', 'cnn', 'custom'). */
  readonly name: string;
  /** Shape of one sample: [features] or [channels, height, width] (each an integer ≥ 1). */
  readonly input: readonly number[];
  readonly layers: readonly LayerSpec[];
}

/**
 * A validated, deeply frozen {@link ModelSpec}.
 *
 * @throws InvalidArgumentError naming the bad field (`model.layers[2].kernel`).
 */
export function defineModel(name: string, input: readonly number[], layers: readonly LayerSpec[]): ModelSpec {
  const spec: ModelSpec = { name, input, layers };
  assertModelSpec(spec);
  return Object.freeze({
    name,
    input: Object.freeze([...input]),
    layers: Object.freeze(layers.map((layer) => Object.freeze({ ...layer }))),
  });
}

/** dense(h1), relu, dense(h2), relu, …, dense(classes): an MLP's layer list. */
function denseStack(hidden: readonly number[], classes: number): LayerSpec[] {
  const layers: LayerSpec[] = [];
  for (const units of hidden) layers.push({ type: 'dense', units }, { type: 'relu' });
  layers.push({ type: 'dense', units: classes });
  return layers;
}

/** Multinomial logistic regression over `inputs` features and `classes` classes: one dense layer. */
export function logisticRegression(inputs: number, classes: number): ModelSpec {
  return defineModel('logreg', [inputs], denseStack([], classes));
}

/** An MLP over `inputs` features: dense → ReLU for each hidden width, then dense `classes`. */
export function mlp(inputs: number, hidden: readonly number[], classes: number): ModelSpec {
  return defineModel('mlp', [inputs], denseStack(hidden, classes));
}

/** The FedAvg paper's MNIST "2NN": 784-200-200-10, ReLU (199,210 parameters). */
export const MNIST_2NN: ModelSpec = defineModel('2nn', [784], denseStack([200, 200], 10));

/**
 * The FedAvg paper's MNIST CNN (McMahan et al. 2017): on a [1, 28, 28] input, conv 5×5 32 'same'
 * → ReLU → max-pool 2 → conv 5×5 64 'same' → ReLU → max-pool 2 → flatten → dense 512 → ReLU →
 * dense 10 → softmax (1,663,370 parameters).
 */
export const FEDAVG_CNN: ModelSpec = defineModel(
  'cnn',
  [1, 28, 28],
  [
    { type: 'conv2d', filters: 32, kernel: 5, padding: 'same' },
    { type: 'relu' },
    { type: 'maxpool2d', size: 2 },
    { type: 'conv2d', filters: 64, kernel: 5, padding: 'same' },
    { type: 'relu' },
    { type: 'maxpool2d', size: 2 },
    { type: 'flatten' },
    { type: 'dense', units: 512 },
    { type: 'relu' },
    { type: 'dense', units: 10 },
    { type: 'softmax' },
  ],
);
