import {
  assertParameters,
  describeModel,
  type ModelLayout,
  type ModelSpec,
  modelLayout,
} from '../../federation/index.ts';
import { assertFiniteArray, InvalidArgumentError } from '../../src/errors/index.ts';
import type { Dataset } from '../engine/index.ts';
import { assertDataset } from '../engine/index.ts';

/**
 * Validates what `train` and `evaluate` receive and returns the model's layout: the spec, the
 * parameter vector (length and finiteness, under `parametersName`) and the data set (shape,
 * finite features, labels in range, `featureCount` equal to the values of one input sample (the
 * product of `spec.input`: a [channels, height, width] sample is stored CHW row-major) and
 * `classCount` to the model's classes).
 */
export function assertModelInputs(
  spec: ModelSpec,
  parameters: Float32Array,
  parametersName: string,
  data: Dataset,
): ModelLayout {
  const layout = modelLayout(spec);
  assertParameters(spec, parameters, parametersName);
  assertFiniteArray(parametersName, parameters);
  if (typeof data !== 'object' || data === null) {
    throw new InvalidArgumentError(`data must be a Dataset, got ${String(data)}`);
  }
  if (!(data.features instanceof Float32Array) || !(data.labels instanceof Uint8Array)) {
    throw new InvalidArgumentError('data.features must be a Float32Array and data.labels a Uint8Array');
  }
  const inputs = layout.inputSize;
  const classes = layout.classes;
  const model = `model ${spec.name} [${describeModel(spec)}]`;
  if (data.featureCount !== inputs) {
    const shape = spec.input.length > 1 ? ` (input [${spec.input.join(', ')}])` : '';
    throw new InvalidArgumentError(
      `data.featureCount ${data.featureCount}, ${model} expects ${inputs}${shape}`,
    );
  }
  if (data.classCount !== classes) {
    throw new InvalidArgumentError(`data.classCount ${data.classCount}, ${model} expects ${classes}`);
  }
  assertDataset(data);
  return layout;
}
