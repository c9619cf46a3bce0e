import type { ModelLayout, ModelOp } from '../../federation/index.ts';
import type { Conv2dShape, PoolShape } from '../engine/index.ts';
import { reluBackwardDispatch, reluDispatch } from './activation-kernels.ts';
import type { BufferScope } from './buffer-scope.ts';
import { conv2dForwardDispatch, conv2dInputGradDispatch } from './conv-kernels.ts';
import { conv2dParamGradDispatches, convParamGradPlan } from './conv-param-grad-kernels.ts';
import {
  denseBiasGradDispatch,
  denseForwardDispatch,
  denseInputGradDispatch,
  denseWeightGradDispatch,
} from './dense-kernels.ts';
import type { EvalBuffers, EvalForwardBuilder } from './evaluate-loop.ts';
import type { Dispatch, GpuContext } from './gpu-context.ts';
import { type Activations, keptActivations, logitsOp, pingPongActivations } from './network-activations.ts';
import { maxPoolBackwardDispatch, maxPoolForwardDispatch } from './pool-kernels.ts';
import { softmaxDispatch } from './softmax-kernels.ts';
import type { TrainBuffers, TrainStepBuilder } from './train-loop.ts';

/*
 * The generic sequential path: any model `modelLayout` accepts (conv2d, maxpool2d, flatten, relu,
 * dense, softmax), run op by op on NCHW activations [rows][op.outputSize]. Flatten and the final
 * softmax move no data (the layout is already row-major CHW; the loss takes the logits, the output
 * of the last dense op). Gradients are not propagated below the first parameterized op.
 */

function convShape(op: ModelOp, rows: number): Conv2dShape {
  const layer = op.layer as Extract<ModelOp['layer'], { type: 'conv2d' }>;
  const [channels, height, width] = op.inputShape as [number, number, number];
  return {
    batch: rows,
    channels,
    height,
    width,
    filters: layer.filters,
    kernel: layer.kernel,
    padding: layer.padding,
  };
}

function poolShape(op: ModelOp, rows: number): PoolShape {
  const layer = op.layer as Extract<ModelOp['layer'], { type: 'maxpool2d' }>;
  const [channels, height, width] = op.inputShape as [number, number, number];
  return { batch: rows, channels, height, width, size: layer.size };
}

/** Forward dispatches of ops 0 … logitsOp for `rows` rows. */
function forward(
  ctx: GpuContext,
  layout: ModelLayout,
  act: Activations,
  params: GPUBuffer,
  rows: number,
): Dispatch[] {
  const dispatches: Dispatch[] = [];
  for (let i = 0; i <= logitsOp(layout); i++) {
    const op = layout.ops[i]!;
    const x = act.input(i);
    const y = act.output(i);
    switch (op.layer.type) {
      case 'conv2d':
        dispatches.push(conv2dForwardDispatch(ctx, x, params, y, convShape(op, rows), op.slice!));
        break;
      case 'dense':
        dispatches.push(denseForwardDispatch(ctx, x, params, y, { batch: rows, ...op.slice! }));
        break;
      case 'maxpool2d':
        dispatches.push(maxPoolForwardDispatch(ctx, { x, y, argmax: act.argmax(i) }, poolShape(op, rows)));
        break;
      case 'relu':
        dispatches.push(reluDispatch(ctx, x, y, rows * op.outputSize));
        break;
      case 'flatten':
      case 'softmax':
        break;
    }
  }
  return dispatches;
}

/**
 * The network's training step for up to `batch` rows: forward (every activation kept), softmax
 * cross-entropy on the logits, then from the logits op down to the first parameterized op: dense
 * and conv2d write their weight and bias gradients into `grad` and (above the first parameterized
 * op) their input gradient; ReLU and max-pool pass the gradient back; flatten passes it through.
 * Input gradients alternate between two buffers.
 */
export function networkTrainStep(
  ctx: GpuContext,
  layout: ModelLayout,
  b: TrainBuffers,
  scope: BufferScope,
  batch: number,
): TrainStepBuilder {
  const ops = layout.ops;
  const top = logitsOp(layout);
  const first = ops.findIndex((op) => op.slice !== null);
  const act = keptActivations(scope, layout, b.x, batch);
  const widest = Math.max(...ops.slice(first, top + 1).flatMap((op) => [op.inputSize, op.outputSize]));
  const delta = [scope.storage(batch * widest * 4, 'delta a'), scope.storage(batch * widest * 4, 'delta b')];
  const scratch = Math.max(
    1,
    ...ops.map((op) =>
      op.layer.type === 'conv2d' ? convParamGradPlan(convShape(op, batch)).scratchFloats : 0,
    ),
  );
  const partial = scope.storage(scratch * 4, 'conv gradient partial sums');
  return (rows) => {
    const dispatches = forward(ctx, layout, act, b.params, rows);
    let cur = 0;
    dispatches.push(
      softmaxDispatch(
        ctx,
        {
          logits: act.output(top),
          labels: b.labels,
          dlogits: delta[0]!,
          rowLoss: b.rowLoss,
          predicted: b.predicted,
        },
        rows,
        layout.classes,
      ).dispatch,
    );
    for (let i = top; i >= first; i--) {
      const op = ops[i]!;
      const dy = delta[cur]!;
      const dx = delta[1 - cur]!;
      const needDx = i > first;
      switch (op.layer.type) {
        case 'dense': {
          const shape = { batch: rows, ...op.slice! };
          dispatches.push(denseWeightGradDispatch(ctx, dy, act.input(i), b.grad, shape));
          dispatches.push(denseBiasGradDispatch(ctx, dy, b.grad, shape));
          if (needDx) dispatches.push(denseInputGradDispatch(ctx, dy, b.params, dx, shape));
          break;
        }
        case 'conv2d': {
          const shape = convShape(op, rows);
          const buffers = { x: act.input(i), dy, partial, grad: b.grad };
          dispatches.push(...conv2dParamGradDispatches(ctx, buffers, shape, op.slice!));
          if (needDx) dispatches.push(conv2dInputGradDispatch(ctx, dy, b.params, dx, shape, op.slice!));
          break;
        }
        case 'maxpool2d':
          dispatches.push(
            maxPoolBackwardDispatch(ctx, { dy, argmax: act.argmax(i), dx }, poolShape(op, rows)),
          );
          break;
        case 'relu':
          dispatches.push(reluBackwardDispatch(ctx, act.input(i), dy, dx, rows * op.inputSize));
          break;
        case 'flatten':
        case 'softmax':
          continue;
      }
      if (needDx) cur = 1 - cur;
    }
    return dispatches;
  };
}

/** The network's forward pass for chunks of up to `chunk` rows, activations in two alternating buffers. */
export function networkEvalForward(
  ctx: GpuContext,
  layout: ModelLayout,
  b: EvalBuffers,
  scope: BufferScope,
  chunk: number,
): EvalForwardBuilder {
  const act = pingPongActivations(scope, layout, b.x, chunk);
  return (rows) => ({
    dispatches: forward(ctx, layout, act, b.params, rows),
    logits: act.output(logitsOp(layout)),
  });
}
