/** The `type`s a `LayerSpec` may have, in the order messages list them. */
export const LAYER_TYPES = Object.freeze([
  'dense',
  'conv2d',
  'maxpool2d',
  'flatten',
  'relu',
  'softmax',
] as const);

/** Largest `units` of a dense layer and any one input dimension. */
export const MAX_WIDTH = 1 << 20;

/** Largest `filters` of a convolution. */
export const MAX_FILTERS = 1 << 16;

/** Largest convolution kernel side and pooling window side. */
export const MAX_WINDOW = 1 << 10;

/** Most values one sample may have at any point of the model (input or a layer's output). */
export const MAX_ACTIVATIONS = 1 << 26;
