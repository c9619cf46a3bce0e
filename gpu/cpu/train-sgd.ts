import type { ModelLayout } from '../../federation/index.ts';
import type { Dataset, TrainConfig, TrainResult } from '../engine/index.ts';
import { batchOrder, trainStopReason } from '../engine/index.ts';
import type { ModelPass } from './model-pass.ts';
import { sgdStepInto } from './sgd-step.ts';
import { YIELD_EVERY_MS, yieldToEventLoop } from './yield-to-event-loop.ts';

/**
 * The training loop, inputs already validated: for each epoch e the rows are visited in
 * `batchOrder(count, shuffleSeed, e)` order in consecutive mini-batches of `batchSize` (the last
 * may be smaller); each batch runs forward, backward and one SGD step over the whole flat
 * parameter vector, anchored at `initial` for the proximal term. `pass` (the MLP fast path or the
 * generic sequential one) must fit the layout with `min(batchSize, count)` rows and training
 * buffers; its velocity is zeroed here, and nothing else may use it until the promise settles.
 *
 * Between mini-batches it yields to the event loop once {@link YIELD_EVERY_MS} of computation
 * have passed, then asks {@link trainStopReason} whether to stop (`config.signal`,
 * `config.stopAtUnixMs`). Neither changes which batches run before the stop or their arithmetic.
 *
 * @returns new parameters; `initial` and `data` are not modified (nor may the caller modify them
 *   until the promise settles).
 */
export async function trainSgd(
  layout: ModelLayout,
  initial: Float32Array,
  data: Dataset,
  config: TrainConfig,
  pass: ModelPass,
): Promise<TrainResult> {
  const w = new Float32Array(initial);
  const count = data.count;
  const batchSize = Math.min(config.batchSize, count);
  const { learningRate, momentum, proximalMu } = config;
  const parameterCount = layout.parameterCount;
  const { grad, velocity } = pass;
  velocity.fill(0);
  let lossSum = 0;
  let steps = 0;
  let samples = 0;
  let stopped: TrainResult['stopped'] = 'complete';
  let sliceStart = performance.now();
  epochs: for (let epoch = 0; epoch < config.epochs; epoch++) {
    const order = batchOrder(count, config.shuffleSeed, epoch);
    for (let start = 0; start < count; start += batchSize) {
      // Yield before the stop check, so an abort fired by a timer during the yield takes effect at once.
      if (performance.now() - sliceStart >= YIELD_EVERY_MS) {
        await yieldToEventLoop();
        sliceStart = performance.now();
      }
      const reason = trainStopReason(config);
      if (reason !== null) {
        stopped = reason;
        break epochs;
      }
      const n = Math.min(batchSize, count - start);
      pass.load(data, order, start, n);
      pass.forward(w, n);
      lossSum += pass.backward(w, n);
      sgdStepInto(w, grad, velocity, initial, learningRate, momentum, proximalMu, parameterCount);
      steps++;
      samples += n;
    }
  }
  return { parameters: w, meanLoss: samples === 0 ? 0 : lossSum / samples, samples, steps, stopped };
}
