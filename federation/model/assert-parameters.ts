import { InvalidArgumentError } from '../../src/errors/index.ts';
import { describeModel } from './model-description.ts';
import { parameterCount } from './model-layout.ts';
import type { ModelSpec } from './model-spec.ts';

/**
 * Throws `INVALID_ARGUMENT` when a parameter vector does not fit the model
 * ("parameters length 1000, model 2nn [784-200-200-10] expects 199210").
 */
export function assertParameters(spec: ModelSpec, parameters: Float32Array, name = 'parameters'): void {
  const expected = parameterCount(spec);
  if (!(parameters instanceof Float32Array) || parameters.length !== expected) {
    throw new InvalidArgumentError(
      `${name} length ${parameters?.length}, model ${spec.name} [${describeModel(spec)}] expects ${expected}`,
      { details: { name, actual: parameters?.length, expected } },
    );
  }
}
