export { assertTrainConfig, cpuKernels, createCpuEngine } from './cpu/index.ts';
export {
  assertDataset,
  batchOrder,
  type Conv2dShape,
  type Dataset,
  type EvalResult,
  type Kernels,
  type PoolShape,
  type TrainConfig,
  type TrainingEngine,
  type TrainResult,
} from './engine/index.ts';
export { createWebGpuEngine, GpuError, type GpuErrorCode, type WebGpuEngineOptions } from './webgpu/index.ts';
