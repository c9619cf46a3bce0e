/**
 * Federation: the learning math. Public surface: models and their flat parameter layout
 * (`model/`), error-feedback stochastic
 * quantization (`quantize/`) and its counter-based RNG, which the GPU engine reproduces bit for bit.
 */

export {
  assertModelSpec,
  assertParameters,
  initParameters,
  type LayerSlice,
  logisticRegression,
  MNIST_2NN,
  type ModelLayout,
  type ModelSpec,
  mlp,
  modelLayout,
  parameterCount,
} from './model/index.ts';
export {
  counterKey,
  counterRandom,
  counterUniform,
  dequantize,
  dequantizeSum,
  lowbias32,
  QUANT_BITS,
  type QuantBits,
  type QuantizeOut,
  type QuantizeParams,
  type QuantizeResult,
  type QuantSeed,
  quantizationStep,
  quantize,
  sumErrorBound,
  UNIFORM_SCALE,
  uniformFromBits,
} from './quantize/index.ts';
