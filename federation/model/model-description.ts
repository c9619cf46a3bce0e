import { modelLayout } from './model-layout.ts';
import type { LayerSpec, ModelSpec } from './model-spec.ts';

/**
 * The hidden and output widths when `layers` is an MLP's list — optional flatten layers first,
 * then dense, (relu, dense)*, then an optional softmax — else null. Reads the fields without
 * validating them.
 */
function mlpUnits(layers: readonly LayerSpec[]): number[] | null {
  if (!Array.isArray(layers)) return null;
  let i = 0;
  while (layers[i]?.type === 'flatten') i++;
  const end = layers[layers.length - 1]?.type === 'softmax' ? layers.length - 1 : layers.length;
  const units: number[] = [];
  for (; i < end; i++) {
    const layer = layers[i];
    const wantDense = units.length === 0 || layers[i - 1]?.type === 'relu';
    if (wantDense) {
      if (layer?.type !== 'dense') return null;
      units.push(layer.units);
    } else if (layer?.type !== 'relu' || i + 1 >= end) {
      return null;
    }
  }
  return units.length === 0 ? null : units;
}

/**
 * The widths [inputs, h1, …, outputs] of `spec` when it is a multilayer perceptron: dense layers
 * with a ReLU between each two and none after the last, an optional softmax at the end, on a
 * flat input or one flattened first (explicitly or implicitly by the first dense layer); `inputs`
 * is the number of input values. Null for any other model (convolutions, pooling, a missing or
 * extra ReLU). Engines use it to pick their MLP fast path.
 *
 * @throws InvalidArgumentError when `spec` is invalid (see `modelLayout`).
 */
export function denseWidths(spec: ModelSpec): number[] | null {
  const layout = modelLayout(spec);
  const units = mlpUnits(spec.layers);
  return units === null ? null : [layout.inputSize, ...units];
}

/** One layer's token in {@link describeModel}. */
function layerToken(layer: LayerSpec): string {
  switch (layer?.type) {
    case 'dense':
      return `dense${layer.units}`;
    case 'conv2d':
      return `conv${layer.kernel}x${layer.kernel}x${layer.filters}${layer.padding === 'valid' ? ':valid' : ''}`;
    case 'maxpool2d':
      return `pool${layer.size}`;
    case 'flatten':
    case 'relu':
    case 'softmax':
      return layer.type;
    default:
      return String((layer as { type?: unknown } | null)?.type ?? layer);
  }
}

/**
 * A short description of `spec`'s architecture for messages: the widths of an MLP joined by '-'
 * ("784-200-200-10"), otherwise its layers ("conv5x5x32-relu-pool2-conv5x5x64-relu-pool2-flatten-
 * dense512-relu-dense10-softmax"; a 'valid' convolution reads "conv3x3x16:valid"). Never throws,
 * even for an invalid spec.
 */
export function describeModel(spec: ModelSpec): string {
  const layers = Array.isArray(spec?.layers) ? spec.layers : [];
  const input = Array.isArray(spec?.input) ? spec.input : [];
  const units = mlpUnits(layers);
  if (units !== null && input.length > 0) {
    return [input.reduce((a, d) => a * d, 1), ...units].join('-');
  }
  return layers.map(layerToken).join('-');
}
