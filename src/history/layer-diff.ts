import { describeModel, type ModelSpec, modelLayout } from '../../federation/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { layerTensorNames } from '../versions/index.ts';

/** How one tensor (a layer's W or b) differs between two models; sums in float64. */
export interface TensorDiffStats {
  /** The tensor's safetensors name (`layers.<i>.weight` / `.bias`, as `modelTensors` names it). */
  readonly name: string;
  /** Values in the tensor. */
  readonly count: number;
  /** ‖to − from‖₂. */
  readonly l2Diff: number;
  /** max |to − from| (0 for an empty tensor). */
  readonly maxAbsDiff: number;
  /** ‖from‖₂. */
  readonly l2From: number;
  /** ‖to‖₂. */
  readonly l2To: number;
}

/** One parameterized layer's (dense or conv2d) differences. */
export interface LayerDiffStats {
  /** 0-based index among the parameterized layers. */
  readonly layer: number;
  /** Index of the layer in `spec.layers` (the `<i>` of its tensor names). */
  readonly layerIndex: number;
  readonly kind: 'dense' | 'conv2d';
  /** Fan-in: inputs (dense) or channels·kernel² (conv2d). */
  readonly inputs: number;
  /** Units or filters. */
  readonly outputs: number;
  /** W's shape as PyTorch stores it: [outputs, inputs] or [filters, channels, kernel, kernel]. */
  readonly weightShape: readonly number[];
  /** W. */
  readonly weight: TensorDiffStats;
  /** b, [outputs]. */
  readonly bias: TensorDiffStats;
}

/**
 * Per-layer statistics of the change from `from` to `to`, two parameter vectors of `spec`'s flat
 * layout (`modelLayout`): for each layer's W and b the L2 norm of the difference, the largest
 * absolute difference, and the L2 norm of each side.
 *
 * @throws InvalidArgumentError naming `from` or `to` when it is not a Float32Array of the layout's
 *   parameter count.
 */
export function layerDiffStats(spec: ModelSpec, from: Float32Array, to: Float32Array): LayerDiffStats[] {
  const layout = modelLayout(spec);
  for (const [name, v] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (!(v instanceof Float32Array) || v.length !== layout.parameterCount) {
      throw new InvalidArgumentError(
        `${name} must be a Float32Array of ${layout.parameterCount} parameters (model ${spec.name} [${describeModel(spec)}]), got ${v instanceof Float32Array ? v.length : typeof v}`,
        { details: { name, expected: layout.parameterCount } },
      );
    }
  }
  return layout.layers.map((layer, k) => {
    const names = layerTensorNames(layer.layerIndex);
    const weightCount = layer.inputs * layer.outputs;
    return {
      layer: k,
      layerIndex: layer.layerIndex,
      kind: layer.kind,
      inputs: layer.inputs,
      outputs: layer.outputs,
      weightShape: [...layer.weightShape],
      weight: tensorDiff(names.weight, from, to, layer.weightOffset, weightCount),
      bias: tensorDiff(names.bias, from, to, layer.biasOffset, layer.outputs),
    };
  });
}

function tensorDiff(
  name: string,
  from: Float32Array,
  to: Float32Array,
  offset: number,
  count: number,
): TensorDiffStats {
  let diff2 = 0;
  let from2 = 0;
  let to2 = 0;
  let maxAbs = 0;
  for (let i = offset; i < offset + count; i++) {
    const a = from[i]!;
    const b = to[i]!;
    const d = b - a;
    diff2 += d * d;
    from2 += a * a;
    to2 += b * b;
    const abs = Math.abs(d);
    if (abs > maxAbs) maxAbs = abs;
  }
  return {
    name,
    count,
    l2Diff: Math.sqrt(diff2),
    maxAbsDiff: maxAbs,
    l2From: Math.sqrt(from2),
    l2To: Math.sqrt(to2),
  };
}
