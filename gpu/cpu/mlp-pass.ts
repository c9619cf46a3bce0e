import type { ModelLayout } from '../../federation/index.ts';
import type { Dataset } from '../engine/index.ts';
import { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
import { createMlpWorkspace, type MlpWorkspace } from './mlp-workspace.ts';
import type { ModelPass } from './model-pass.ts';
import { indexNonZero, SPARSE_DENSITY_LIMIT } from './non-zero-rows.ts';
import { reluBackwardInto, reluInto } from './relu.ts';
import { softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';

/**
 * Copies rows `order[start … start + n)` of `data` (or rows start … start + n − 1 when `order` is
 * null) into the workspace's input and label buffers.
 */
export function loadBatch(
  ws: { readonly input: Float32Array; readonly labels: Uint8Array },
  data: Dataset,
  order: Uint32Array | null,
  start: number,
  n: number,
): void {
  const width = data.featureCount;
  const features = data.features;
  const input = ws.input;
  for (let r = 0; r < n; r++) {
    const row = order === null ? start + r : order[start + r]!;
    const from = row * width;
    const to = r * width;
    for (let i = 0; i < width; i++) input[to + i] = features[from + i]!;
    ws.labels[r] = data.labels[row]!;
  }
}

/**
 * Forward pass of the first `n` rows of `ws.input` through the model with parameters `w`:
 * dense → ReLU for every hidden layer, dense for the last. Leaves the logits in the last `ws.pre`.
 */
export function forwardBatch(ws: MlpWorkspace, w: Float32Array, n: number): Float32Array {
  const layers = ws.layout.layers;
  let x = ws.input;
  for (let l = 0; l < layers.length; l++) {
    const layer = layers[l]!;
    const rows = ws.inputRows[l]!;
    const density = indexNonZero(x, n, layer.inputs, rows) / (n * layer.inputs);
    ws.inputDensity[l] = density;
    const z = ws.pre[l]!;
    denseForwardInto(
      x,
      w,
      layer.weightOffset,
      w,
      layer.biasOffset,
      z,
      n,
      layer.inputs,
      layer.outputs,
      density < SPARSE_DENSITY_LIMIT.forward ? rows : null,
    );
    if (l + 1 < layers.length) {
      const a = ws.post[l]!;
      reluInto(z, a, n * layer.outputs);
      x = a;
    }
  }
  return ws.pre[layers.length - 1]!;
}

/**
 * Backward pass after {@link forwardBatch}: writes the gradient of the mean cross-entropy of the
 * first `n` rows into `ws.grad` (every entry overwritten) and returns the SUM of their losses.
 */
export function backwardBatch(ws: MlpWorkspace, w: Float32Array, n: number): number {
  const layers = ws.layout.layers;
  const last = layers.length - 1;
  const classes = layers[last]!.outputs;
  const loss = softmaxCrossEntropyInto(ws.pre[last]!, ws.labels, n, classes, ws.delta[last]!, 1 / n);
  for (let l = last; l >= 0; l--) {
    const layer = layers[l]!;
    const dy = ws.delta[l]!;
    const x = l === 0 ? ws.input : ws.post[l - 1]!;
    const sparse = ws.inputDensity[l]! < SPARSE_DENSITY_LIMIT.weightGradient;
    denseWeightGradientInto(
      x,
      sparse ? ws.inputRows[l]! : null,
      dy,
      ws.grad,
      layer.weightOffset,
      ws.grad,
      layer.biasOffset,
      n,
      layer.inputs,
      layer.outputs,
    );
    if (l > 0) {
      const dyRows = ws.deltaRows[l]!;
      indexNonZero(dy, n, layer.outputs, dyRows);
      const dx = ws.delta[l - 1]!;
      denseBackwardInputInto(w, layer.weightOffset, dy, dyRows, dx, n, layer.inputs, layer.outputs);
      reluBackwardInto(ws.pre[l - 1]!, dx, dx, n * layer.inputs);
    }
  }
  return loss;
}

/**
 * The {@link ModelPass} of an MLP (a layout whose layers are dense with a ReLU between each two:
 * see `denseWidths`) over a fresh {@link MlpWorkspace} for up to `batch` rows: the fast path,
 * with zero-skipping tuned on the MNIST 2NN.
 */
export function createMlpPass(layout: ModelLayout, batch: number, training: boolean): ModelPass {
  const ws = createMlpWorkspace(layout, batch, training);
  return {
    batch,
    training,
    labels: ws.labels,
    grad: ws.grad,
    velocity: ws.velocity,
    load: (data, order, start, n) => loadBatch(ws, data, order, start, n),
    forward: (w, n) => forwardBatch(ws, w, n),
    backward: (w, n) => backwardBatch(ws, w, n),
  };
}
