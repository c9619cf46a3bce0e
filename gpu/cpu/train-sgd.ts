import type { ModelLayout } from '../../federation/index.ts';
import { batchOrder } from '../batch-order.ts';
import type { Dataset, TrainConfig, TrainResult } from '../engine.ts';
import { backwardBatch, forwardBatch, loadBatch } from './mlp-pass.ts';
import type { MlpWorkspace } from './mlp-workspace.ts';
import { sgdStepInto } from './sgd-step.ts';

/**
 * The training loop, inputs already validated: for each epoch e the rows are visited in
 * `batchOrder(count, shuffleSeed, e)` order in consecutive mini-batches of `batchSize` (the last
 * may be smaller); each batch runs forward, backward and one SGD step over the whole flat
 * parameter vector, anchored at `initial` for the proximal term. `ws` must fit the layout with
 * `min(batchSize, count)` rows and training buffers; its velocity is zeroed here.
 *
 * @returns new parameters; `initial` and `data` are not modified.
 */
export function trainSgd(
  layout: ModelLayout,
  initial: Float32Array,
  data: Dataset,
  config: TrainConfig,
  ws: MlpWorkspace,
): TrainResult {
  const w = new Float32Array(initial);
  const count = data.count;
  const batchSize = Math.min(config.batchSize, count);
  const { learningRate, momentum, proximalMu } = config;
  const parameterCount = layout.parameterCount;
  ws.velocity.fill(0);
  let lossSum = 0;
  let steps = 0;
  for (let epoch = 0; epoch < config.epochs; epoch++) {
    const order = batchOrder(count, config.shuffleSeed, epoch);
    for (let start = 0; start < count; start += batchSize) {
      const n = Math.min(batchSize, count - start);
      loadBatch(ws, data, order, start, n);
      forwardBatch(ws, w, n);
      lossSum += backwardBatch(ws, w, n);
      sgdStepInto(w, ws.grad, ws.velocity, initial, learningRate, momentum, proximalMu, parameterCount);
      steps++;
    }
  }
  const samples = config.epochs * count;
  return { parameters: w, meanLoss: lossSum / samples, samples, steps };
}
