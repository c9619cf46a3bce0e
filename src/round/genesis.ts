import {
  defineModel,
  FEDAVG_CNN,
  initParameters,
  type LayerSpec,
  MNIST_2NN,
  type ModelSpec,
  modelLayout,
} from '../../federation/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { dataContractDigest } from '../data/index.ts';
import { CohortError, ConfigError } from '../errors/index.ts';
import { bytesToHex, type Commit, genesisCommit } from '../versions/index.ts';
import { encodeRoundParams } from './round-params.ts';

/**
 * The parts of the federation's data contract (`config.data`) the model is shaped by, read
 * through this local view so the model code depends on nothing else of it.
 */
interface ContractLike {
  readonly image?: { readonly channels: number; readonly height: number; readonly width: number };
  readonly features?: readonly unknown[];
  readonly label?: { readonly classes?: readonly unknown[] };
}

/** dense(h1), relu, …, dense(classes): an MLP's layers. */
function denseLayers(hidden: readonly number[], classes: number): LayerSpec[] {
  return [
    ...hidden.flatMap((units): LayerSpec[] => [{ type: 'dense', units }, { type: 'relu' }]),
    { type: 'dense', units: classes },
  ];
}

/** A `CONFIG_INVALID` error naming `path`. */
function modelInvalid(path: string, message: string, cause?: unknown): ConfigError {
  return new ConfigError('CONFIG_INVALID', message, { details: { path }, cause });
}

/**
 * `defineModel(name, input, layers)`, turning a refusal into `CONFIG_INVALID`: for `custom`
 * (`ownLayers`) the refusal names the field under `learning.layers`, for a built-in model it
 * names `learning.model`. `context` says which model on which input.
 */
function build(
  name: string,
  input: readonly number[],
  layers: readonly LayerSpec[],
  context: string,
  ownLayers: boolean,
): ModelSpec {
  try {
    modelLayout({ name, input, layers }, ownLayers ? 'learning' : 'model');
    return defineModel(name, input, layers);
  } catch (error) {
    if (!(error instanceof CohortError) || error instanceof ConfigError) throw error;
    const field = error.details['name'];
    const path =
      ownLayers && typeof field === 'string' && field.startsWith('learning.') ? field : 'learning.model';
    throw modelInvalid(path, `${context}: ${error.message}`, error);
  }
}

/**
 * The model of `learning.model`, shaped by the federation's data contract when `config.data`
 * exists (input: the contract's image [channels, height, width] or its features' count; classes:
 * `data.label.classes`), else by MNIST ([1, 28, 28] for `cnn` and `custom`, 784 for the others;
 * 10 classes):
 * - `2nn` → dense 200 → ReLU → dense 200 → ReLU → dense classes (MNIST: `MNIST_2NN`);
 * - `logreg` → one dense layer; `mlp` → dense `learning.hidden`… with ReLUs, then dense classes;
 * - `cnn` → the FedAvg CNN (`FEDAVG_CNN`) with its last dense layer sized to the classes; needs an
 *   image input;
 * - `custom` → `learning.layers` as given; its last dense layer must have one unit per class.
 *
 * @throws ConfigError `CONFIG_INVALID` naming the field when the model does not fit the input
 *   (`learning.layers[2].kernel 5 is larger than its 3×3 input`), `cnn` meets tabular data, or a
 *   custom model's outputs differ from the classes.
 */
export function modelSpecFor(config: CohortConfig): ModelSpec {
  const { model, hidden } = config.learning;
  const layers = (config.learning as { layers?: readonly LayerSpec[] }).layers;
  const contract = (config as { data?: ContractLike }).data;
  let input: number[];
  let classes: number;
  let source: string;
  if (contract === undefined) {
    input = model === 'cnn' || model === 'custom' ? [1, 28, 28] : [784];
    classes = 10;
    source = 'MNIST';
  } else {
    const image = contract.image;
    input =
      image !== undefined ? [image.channels, image.height, image.width] : [contract.features?.length ?? 0];
    classes = contract.label?.classes?.length ?? 0;
    source = 'the data contract';
  }
  const flat = input.reduce((a, d) => a * d, 1);
  const shape = `input [${input.join(', ')}] (${source})`;
  switch (model) {
    case 'logreg':
      return build('logreg', [flat], denseLayers([], classes), `learning.model 'logreg' on ${shape}`, false);
    case 'mlp':
      return build(
        'mlp',
        [flat],
        denseLayers(hidden ?? [], classes),
        `learning.model 'mlp' on ${shape}`,
        false,
      );
    case 'cnn': {
      if (input.length !== 3) {
        throw modelInvalid(
          'learning.model',
          `learning.model 'cnn' needs an image input ([channels, height, width]), ${source} gives ${shape}`,
        );
      }
      const cnnLayers = FEDAVG_CNN.layers.map((l, i) =>
        i === FEDAVG_CNN.layers.length - 2 ? { type: 'dense' as const, units: classes } : l,
      );
      return build('cnn', input, cnnLayers, `learning.model 'cnn' on ${shape}`, false);
    }
    case 'custom': {
      if (layers === undefined) throw modelInvalid('learning.layers', "model 'custom' needs its layers");
      const spec = build('custom', input, layers, `learning.layers on ${shape}`, true);
      const last = layers[layers.length - 1]?.type === 'softmax' ? layers.length - 2 : layers.length - 1;
      const logits = layers[last];
      if (logits?.type === 'dense' && logits.units !== classes) {
        throw modelInvalid(
          `learning.layers[${last}].units`,
          `learning.layers[${last}].units is ${logits.units}, but ${source} has ${classes} classes: the last dense layer gives one logit per class`,
        );
      }
      return spec;
    }
    default:
      if (contract === undefined) return MNIST_2NN;
      return build(
        '2nn',
        [flat],
        denseLayers([200, 200], classes),
        `learning.model '2nn' on ${shape}`,
        false,
      );
  }
}

/**
 * The genesis every member computes without any secret: parameters = `initParameters(spec,
 * learning.initSeed)`, commit = `genesisCommit(parameters, params)` with params =
 * `encodeRoundParams({ round: 0, bits: codec.bits, clip: codec.clip, strategy, learningRate,
 * dataContract })`, where `dataContract` is the hex of `dataContractDigest(config.data)` when the federation has
 * a data contract: members whose contracts differ in anything get different genesis hashes, and so
 * never agree on a round's base. Without a `data` section the params (and the genesis) are those of
 * federations from before data contracts.
 */
export function federationGenesis(config: CohortConfig): { commit: Commit; parameters: Float32Array } {
  const parameters = initParameters(modelSpecFor(config), config.learning.initSeed);
  const params = encodeRoundParams({
    round: 0,
    bits: config.codec.bits,
    clip: config.codec.clip,
    strategy: config.learning.strategy,
    learningRate: config.learning.learningRate,
    ...(config.data === undefined ? {} : { dataContract: bytesToHex(dataContractDigest(config.data)) }),
  });
  return { commit: genesisCommit(parameters, params), parameters };
}
