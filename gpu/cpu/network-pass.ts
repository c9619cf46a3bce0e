import type { ModelLayout } from '../../federation/index.ts';
import { conv2dBackwardInto, conv2dForwardInto } from './conv2d.ts';
import { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
import { maxPoolBackwardInto, maxPoolForwardInto } from './max-pool.ts';
import { loadBatch } from './mlp-pass.ts';
import type { ModelPass } from './model-pass.ts';
import { createNetworkWorkspace, type NetworkWorkspace } from './network-workspace.ts';
import { indexNonZero, SPARSE_DENSITY_LIMIT } from './non-zero-rows.ts';
import { reluBackwardInto, reluInto } from './relu.ts';
import { softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';

/**
 * Forward pass of the first `n` rows of `ws.input` through every op of the layout with
 * parameters `w`: conv2d, maxpool2d and dense with the kernels' loops, ReLU in place, flatten and
 * softmax as pass-through (the loss takes the logits). Returns the logits [n][classes].
 */
export function networkForward(ws: NetworkWorkspace, w: Float32Array, n: number): Float32Array {
  const ops = ws.layout.ops;
  let x = ws.input;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    const y = ws.outputs[i]!;
    const layer = op.layer;
    switch (layer.type) {
      case 'conv2d': {
        const slice = op.slice!;
        conv2dForwardInto(x, w, slice.weightOffset, w, slice.biasOffset, y, n, ws.conv[i]!);
        break;
      }
      case 'dense': {
        const slice = op.slice!;
        const rows = ws.denseRows[i]!;
        const density = indexNonZero(x, n, slice.inputs, rows) / (n * slice.inputs);
        ws.denseDensity[i] = density;
        const sparse = density < SPARSE_DENSITY_LIMIT.forward ? rows : null;
        denseForwardInto(
          x,
          w,
          slice.weightOffset,
          w,
          slice.biasOffset,
          y,
          n,
          slice.inputs,
          slice.outputs,
          sparse,
        );
        break;
      }
      case 'maxpool2d': {
        const [channels, height, width] = op.inputShape as [number, number, number];
        maxPoolForwardInto(x, y, ws.argmax[i]!, n, channels, height, width, layer.size);
        break;
      }
      case 'relu':
        reluInto(x, y, n * op.outputSize);
        break;
      case 'flatten':
      case 'softmax':
        break;
    }
    x = y;
  }
  return ws.outputs[ws.logitsOp]!;
}

/**
 * Backward pass after {@link networkForward}: writes the gradient of the mean cross-entropy of the
 * first `n` rows into `ws.grad` (every entry overwritten) and returns the SUM of their losses.
 * Gradients are not propagated below the first parameterized op.
 */
export function networkBackward(ws: NetworkWorkspace, w: Float32Array, n: number): number {
  const ops = ws.layout.ops;
  const logits = ws.outputs[ws.logitsOp]!;
  let current = 0;
  let dy = ws.delta[current]!;
  const loss = softmaxCrossEntropyInto(logits, ws.labels, n, ws.layout.classes, dy, 1 / n);
  for (let i = ws.logitsOp; i >= ws.firstParameterizedOp; i--) {
    const op = ops[i]!;
    const layer = op.layer;
    const x = i === 0 ? ws.input : ws.outputs[i - 1]!;
    const needDx = i > ws.firstParameterizedOp;
    const dx = ws.delta[1 - current]!;
    switch (layer.type) {
      case 'conv2d': {
        const slice = op.slice!;
        const w0 = slice.weightOffset;
        const b0 = slice.biasOffset;
        conv2dBackwardInto(x, w, w0, dy, needDx ? dx : null, ws.grad, w0, ws.grad, b0, n, ws.conv[i]!);
        break;
      }
      case 'dense': {
        const slice = op.slice!;
        const sparse = ws.denseDensity[i]! < SPARSE_DENSITY_LIMIT.weightGradient ? ws.denseRows[i]! : null;
        denseWeightGradientInto(
          x,
          sparse,
          dy,
          ws.grad,
          slice.weightOffset,
          ws.grad,
          slice.biasOffset,
          n,
          slice.inputs,
          slice.outputs,
        );
        if (needDx) {
          indexNonZero(dy, n, slice.outputs, ws.deltaRows);
          denseBackwardInputInto(w, slice.weightOffset, dy, ws.deltaRows, dx, n, slice.inputs, slice.outputs);
        }
        break;
      }
      case 'maxpool2d':
        maxPoolBackwardInto(dy, ws.argmax[i]!, dx, n * op.outputSize, n * op.inputSize);
        break;
      case 'relu':
        // In place: the output is > 0 exactly where the input was.
        reluBackwardInto(ws.outputs[i]!, dy, dy, n * op.outputSize);
        continue;
      case 'flatten':
      case 'softmax':
        continue;
    }
    current = 1 - current;
    dy = dx;
  }
  return loss;
}

/**
 * The {@link ModelPass} of any valid layout over a fresh {@link NetworkWorkspace} for up to
 * `batch` rows: the generic sequential path (convolutions, pooling, dense layers in any order the
 * spec allows).
 */
export function createNetworkPass(layout: ModelLayout, batch: number, training: boolean): ModelPass {
  const ws = createNetworkWorkspace(layout, batch, training);
  return {
    batch,
    training,
    labels: ws.labels,
    grad: ws.grad,
    velocity: ws.velocity,
    load: (data, order, start, n) => loadBatch(ws, data, order, start, n),
    forward: (w, n) => networkForward(ws, w, n),
    backward: (w, n) => networkBackward(ws, w, n),
  };
}
