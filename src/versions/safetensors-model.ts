import { describeModel, type ModelSpec, modelLayout } from '../../federation/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import type { SafetensorsTensor } from './safetensors.ts';

// How Cohort's flat parameter vector maps onto named safetensors tensors (the names PyTorch gives
// a module whose `layers` is an `nn.Sequential` built from the spec's layer list).

/**
 * The safetensors names of the layer at `layerIndex` in `spec.layers`: `layers.<index>.weight` and
 * `layers.<index>.bias` (for an MLP, dense layer k is at index 2k).
 */
export function layerTensorNames(layerIndex: number): { weight: string; bias: string } {
  assertInteger('layerIndex', layerIndex, 0, Number.MAX_SAFE_INTEGER);
  return { weight: `layers.${layerIndex}.weight`, bias: `layers.${layerIndex}.bias` };
}

/**
 * The tensors of a model, named as PyTorch names the state dict of a module whose attribute
 * `layers` is an `nn.Sequential` of the spec's layers in order (Linear, Conv2d, MaxPool2d,
 * Flatten, ReLU, Softmax; a dense layer on an image input needs a Flatten before it in PyTorch,
 * which must not shift the indices, so list it explicitly in the spec): the parameterized layer at
 * index i of `spec.layers` is `layers.<i>.weight` with PyTorch's shape ([outputs, inputs] for
 * `nn.Linear`, [filters, channels, k, k] for `nn.Conv2d`: the flat layout's W is already that,
 * row-major) and `layers.<i>.bias` with shape [outputs]; other layers have no parameters. In layer
 * order, weight before bias, so {@link encodeSafetensors} lays the data out exactly as the flat
 * vector. For an MLP (dense, ReLU, dense, …) dense layer k is `layers.<2k>`.
 *
 * Each `data` is a view into `parameters` (no copy).
 *
 * @throws InvalidArgumentError when `spec` is invalid, or `parameters` is not a Float32Array of the
 *   layout's `parameterCount` (the message names both lengths).
 */
export function modelTensors(spec: ModelSpec, parameters: Float32Array): SafetensorsTensor[] {
  const layout = modelLayout(spec);
  if (!(parameters instanceof Float32Array) || parameters.length !== layout.parameterCount) {
    throw new InvalidArgumentError(
      `parameters length ${(parameters as Float32Array | undefined)?.length}, model ${spec.name} ` +
        `[${describeModel(spec)}] expects ${layout.parameterCount}`,
      { details: { actual: parameters?.length, expected: layout.parameterCount } },
    );
  }
  return layout.layers.flatMap((layer) => {
    const names = layerTensorNames(layer.layerIndex);
    const weightEnd = layer.weightOffset + layer.outputs * layer.inputs;
    return [
      {
        name: names.weight,
        dtype: 'F32' as const,
        shape: [...layer.weightShape],
        data: parameters.subarray(layer.weightOffset, weightEnd),
      },
      {
        name: names.bias,
        dtype: 'F32' as const,
        shape: [layer.outputs],
        data: parameters.subarray(layer.biasOffset, layer.biasOffset + layer.outputs),
      },
    ];
  });
}

/** A tensor as {@link parametersFromTensors} reads it: a decoded one, or one named for encoding. */
export interface SafetensorsTensorLike {
  readonly dtype?: string;
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/**
 * Inverse of {@link modelTensors}: the flat parameter vector of `spec` from tensors named
 * `layers.<i>.weight` / `layers.<i>.bias` (i: the layer's index in `spec.layers`), as {@link decodeSafetensors} returns them (a Map) or
 * as a list of named tensors. A fresh array.
 *
 * @throws InvalidArgumentError naming the tensor when one is missing, repeated or unexpected, has
 *   a dtype other than F32, a shape other than the layer's, data whose length differs from its
 *   shape, or a value that is NaN or ±Infinity.
 */
export function parametersFromTensors(
  spec: ModelSpec,
  tensors:
    | ReadonlyMap<string, SafetensorsTensorLike>
    | readonly (SafetensorsTensorLike & { readonly name: string })[],
): Float32Array {
  const layout = modelLayout(spec);
  const byName = new Map<string, SafetensorsTensorLike>();
  if (tensors instanceof Map) {
    for (const [name, tensor] of tensors) byName.set(name, tensor);
  } else if (Array.isArray(tensors)) {
    for (const tensor of tensors as readonly (SafetensorsTensorLike & { readonly name: string })[]) {
      if (byName.has(tensor.name)) {
        throw new InvalidArgumentError(`tensor ${JSON.stringify(tensor.name)} appears twice`, {
          details: { name: tensor.name },
        });
      }
      byName.set(tensor.name, tensor);
    }
  } else {
    throw new InvalidArgumentError('tensors must be a Map or an array of named tensors');
  }

  const out = new Float32Array(layout.parameterCount);
  const expected = new Set<string>();
  const model = `model ${spec.name} [${describeModel(spec)}]`;
  for (const layer of layout.layers) {
    const names = layerTensorNames(layer.layerIndex);
    const parts: [string, number[], number][] = [
      [names.weight, [...layer.weightShape], layer.weightOffset],
      [names.bias, [layer.outputs], layer.biasOffset],
    ];
    for (const [name, shape, offset] of parts) {
      expected.add(name);
      const tensor = byName.get(name);
      const label = `tensor ${JSON.stringify(name)}`;
      if (tensor === undefined) {
        throw new InvalidArgumentError(
          `${label} is missing; ${model} needs it with shape [${shape.join(', ')}]`,
          {
            details: { name, shape },
          },
        );
      }
      if (tensor.dtype !== undefined && tensor.dtype !== 'F32') {
        throw new InvalidArgumentError(`${label} has dtype ${tensor.dtype}; expected F32`, {
          details: { name, dtype: tensor.dtype },
        });
      }
      const actual = Array.isArray(tensor.shape) ? tensor.shape : [];
      if (actual.length !== shape.length || actual.some((d, i) => d !== shape[i])) {
        throw new InvalidArgumentError(
          `${label} has shape [${actual.join(', ')}]; ${model} expects [${shape.join(', ')}]`,
          { details: { name, shape: [...actual], expected: shape } },
        );
      }
      const count = shape.reduce((a, d) => a * d, 1);
      if (!(tensor.data instanceof Float32Array) || tensor.data.length !== count) {
        throw new InvalidArgumentError(
          `${label} data length ${(tensor.data as Float32Array | undefined)?.length}, shape expects ${count}`,
          { details: { name } },
        );
      }
      for (let i = 0; i < count; i++) {
        const v = tensor.data[i]!;
        if (v - v !== 0) {
          throw new InvalidArgumentError(`${label}: data[${i}] is ${v}; every value must be finite`, {
            details: { name, index: i, value: String(v) },
          });
        }
      }
      out.set(tensor.data, offset);
    }
  }
  for (const name of byName.keys()) {
    if (!expected.has(name)) {
      throw new InvalidArgumentError(`tensor ${JSON.stringify(name)} is not a parameter of ${model}`, {
        details: { name },
      });
    }
  }
  return out;
}
