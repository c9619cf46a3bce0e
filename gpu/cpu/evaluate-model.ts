import type { Dataset, EvalResult } from '../engine/index.ts';
import type { ModelPass } from './model-pass.ts';
import { countCorrect, softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';
import { YIELD_EVERY_MS, yieldToEventLoop } from './yield-to-event-loop.ts';

/**
 * Mean cross-entropy, arg-max accuracy (ties → lowest class index) and the confusion counts
 * ([label][prediction]) of `parameters` on every row
 * of `data`, in row order, `pass.batch` rows per forward pass. Inputs already validated. Between
 * forward passes it yields to the event loop once {@link YIELD_EVERY_MS} of computation have
 * passed (a CNN evaluates tens of images per second on one core), so neither `parameters`, `data`
 * nor `pass` may be used elsewhere until the promise settles.
 */
export async function evaluateModel(
  parameters: Float32Array,
  data: Dataset,
  pass: ModelPass,
): Promise<EvalResult> {
  const count = data.count;
  const classes = data.classCount;
  let lossSum = 0;
  let correct = 0;
  const confusion = new Uint32Array(classes * classes);
  let sliceStart = performance.now();
  for (let start = 0; start < count; start += pass.batch) {
    if (performance.now() - sliceStart >= YIELD_EVERY_MS) {
      await yieldToEventLoop();
      sliceStart = performance.now();
    }
    const n = Math.min(pass.batch, count - start);
    pass.load(data, null, start, n);
    const logits = pass.forward(parameters, n);
    lossSum += softmaxCrossEntropyInto(logits, pass.labels, n, classes, null, 1);
    correct += countCorrect(logits, pass.labels, n, classes, confusion);
  }
  return { loss: lossSum / count, accuracy: correct / count, count, confusion };
}
