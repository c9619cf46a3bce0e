export { assertParameters } from './assert-parameters.ts';
export { initParameters } from './init-parameters.ts';
export { LAYER_TYPES, MAX_ACTIVATIONS, MAX_FILTERS, MAX_WIDTH, MAX_WINDOW } from './layer-types.ts';
export { denseWidths, describeModel } from './model-description.ts';
export {
  assertModelSpec,
  type LayerSlice,
  type ModelLayout,
  type ModelOp,
  modelLayout,
  parameterCount,
} from './model-layout.ts';
export {
  defineModel,
  FEDAVG_CNN,
  type LayerSpec,
  logisticRegression,
  MNIST_2NN,
  type ModelSpec,
  mlp,
} from './model-spec.ts';
