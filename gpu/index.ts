export { batchOrder } from './batch-order.ts';
export { assertTrainConfig, cpuKernels, createCpuEngine } from './cpu/index.ts';
export { assertDataset } from './dataset.ts';
export type {
  Conv2dShape,
  Dataset,
  EvalResult,
  Kernels,
  PoolShape,
  TrainConfig,
  TrainingEngine,
  TrainResult,
} from './engine.ts';
export { createWebGpuEngine, GpuError, type GpuErrorCode, type WebGpuEngineOptions } from './webgpu/index.ts';
