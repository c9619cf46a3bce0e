import type { Dataset, EvalResult } from '../engine.ts';
import { forwardBatch, loadBatch } from './mlp-pass.ts';
import type { MlpWorkspace } from './mlp-workspace.ts';
import { countCorrect, softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';

/**
 * Mean cross-entropy and arg-max accuracy (ties → lowest class index) of `parameters` on every row
 * of `data`, in row order, `ws.batch` rows per forward pass. Inputs already validated.
 */
export function evaluateModel(parameters: Float32Array, data: Dataset, ws: MlpWorkspace): EvalResult {
  const count = data.count;
  const classes = data.classCount;
  let lossSum = 0;
  let correct = 0;
  for (let start = 0; start < count; start += ws.batch) {
    const n = Math.min(ws.batch, count - start);
    loadBatch(ws, data, null, start, n);
    const logits = forwardBatch(ws, parameters, n);
    lossSum += softmaxCrossEntropyInto(logits, ws.labels, n, classes, null, 1);
    correct += countCorrect(logits, ws.labels, n, classes);
  }
  return { loss: lossSum / count, accuracy: correct / count, count };
}
