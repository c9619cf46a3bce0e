export { batchOrder } from './batch-order.ts';
export { assertDataset } from './dataset.ts';
export type { Dataset, EvalResult, Kernels, TrainConfig, TrainingEngine, TrainResult } from './engine.ts';
