export {
  counterKey,
  counterRandom,
  counterUniform,
  lowbias32,
  UNIFORM_SCALE,
  uniformFromBits,
} from './counter-random.ts';
export { dequantize, dequantizeSum } from './dequantize.ts';
export {
  QUANT_BITS,
  type QuantBits,
  type QuantGrid,
  quantizationStep,
  resolveGrid,
  sumErrorBound,
} from './quant-grid.ts';
export {
  assertSumFinite,
  checkQuantizeParams,
  type QuantizeOut,
  type QuantizeParams,
  type QuantizeResult,
  type QuantSeed,
  quantize,
} from './quantize.ts';
