/**
 * Federation: the site-side pipeline of a round. Public surface: error-feedback stochastic
 * quantization (`quantize/`) and its counter-based RNG, which the GPU engine reproduces bit for bit.
 */
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
