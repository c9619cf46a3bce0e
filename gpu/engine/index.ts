// What every training engine shares: the engine interface, datasets, the batch order and the stop
// rule. The CPU and WebGPU engines import it; it imports neither.
export { batchOrder } from './batch-order.ts';
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
export { trainCanStop, trainStopReason } from './train-stop.ts';
