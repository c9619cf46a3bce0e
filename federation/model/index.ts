export { initParameters } from './init-parameters.ts';
export {
  assertModelSpec,
  assertParameters,
  type LayerSlice,
  logisticRegression,
  MNIST_2NN,
  type ModelLayout,
  type ModelSpec,
  mlp,
  modelLayout,
  parameterCount,
} from './model-spec.ts';
