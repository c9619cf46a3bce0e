import type { ModelLayout } from '../../federation/index.ts';
import { reluBackwardDispatch, reluDispatch } from './activation-kernels.ts';
import type { BufferScope } from './buffer-scope.ts';
import {
  denseBiasGradDispatch,
  denseForwardDispatch,
  denseInputGradDispatch,
  denseWeightGradDispatch,
} from './dense-kernels.ts';
import type { EvalBuffers, EvalForwardBuilder } from './evaluate-loop.ts';
import type { Dispatch, GpuContext } from './gpu-context.ts';
import { softmaxDispatch } from './softmax-kernels.ts';
import type { TrainBuffers, TrainStepBuilder } from './train-loop.ts';

/*
 * The MLP fast path (models where `denseWidths(spec)` is non-null): dense layers with a ReLU
 * between each two, z_i = a_{i−1}·W_iᵀ + b_i, a_i = max(z_i, 0), logits = z_last.
 */

/** Forward dispatches of `rows` rows from `x`: z_i, and a_i for every layer but the last. */
function mlpForward(
  ctx: GpuContext,
  layout: ModelLayout,
  act: { x: GPUBuffer; z: readonly GPUBuffer[]; a: readonly (GPUBuffer | null)[] },
  params: GPUBuffer,
  rows: number,
): Dispatch[] {
  const layers = layout.layers;
  const dispatches: Dispatch[] = [];
  layers.forEach((l, i) => {
    const input = i === 0 ? act.x : act.a[i - 1]!;
    dispatches.push(denseForwardDispatch(ctx, input, params, act.z[i]!, { batch: rows, ...l }));
    if (i + 1 < layers.length) dispatches.push(reluDispatch(ctx, act.z[i]!, act.a[i]!, rows * l.outputs));
  });
  return dispatches;
}

/** Pre-activations z_i and activations a_i (none after the last layer) for `rows` rows. */
function mlpActivations(scope: BufferScope, layout: ModelLayout, rows: number) {
  const layers = layout.layers;
  const z = layers.map((l, i) => scope.storage(rows * l.outputs * 4, `z${i}`));
  const a = layers.map((l, i) =>
    i + 1 < layers.length ? scope.storage(rows * l.outputs * 4, `a${i}`) : null,
  );
  return { z, a };
}

/**
 * The MLP's training step for up to `batch` rows: forward, softmax cross-entropy on the last
 * layer's z, then per layer from the last: dW = dzᵀ·a, db = Σ dz, and (below the top) da = dz·W,
 * dz = da · [z > 0].
 */
export function mlpTrainStep(
  ctx: GpuContext,
  layout: ModelLayout,
  b: TrainBuffers,
  scope: BufferScope,
  batch: number,
): TrainStepBuilder {
  const layers = layout.layers;
  const depth = layers.length;
  const { z, a } = mlpActivations(scope, layout, batch);
  const dz = layers.map((l, i) => scope.storage(batch * l.outputs * 4, `dz${i}`));
  const da = layers.map((l, i) => (i + 1 < depth ? scope.storage(batch * l.outputs * 4, `da${i}`) : null));
  return (rows) => {
    const dispatches = mlpForward(ctx, layout, { x: b.x, z, a }, b.params, rows);
    const input = (i: number): GPUBuffer => (i === 0 ? b.x : a[i - 1]!);
    dispatches.push(
      softmaxDispatch(
        ctx,
        {
          logits: z[depth - 1]!,
          labels: b.labels,
          dlogits: dz[depth - 1]!,
          rowLoss: b.rowLoss,
          predicted: b.predicted,
        },
        rows,
        layout.classes,
      ).dispatch,
    );
    for (let i = depth - 1; i >= 0; i--) {
      const l = layers[i]!;
      dispatches.push(denseWeightGradDispatch(ctx, dz[i]!, input(i), b.grad, { batch: rows, ...l }));
      dispatches.push(denseBiasGradDispatch(ctx, dz[i]!, b.grad, { batch: rows, ...l }));
      if (i > 0) {
        dispatches.push(denseInputGradDispatch(ctx, dz[i]!, b.params, da[i - 1]!, { batch: rows, ...l }));
        dispatches.push(reluBackwardDispatch(ctx, z[i - 1]!, da[i - 1]!, dz[i - 1]!, rows * l.inputs));
      }
    }
    return dispatches;
  };
}

/** The MLP's forward pass for chunks of up to `chunk` rows (logits: the last layer's z). */
export function mlpEvalForward(
  ctx: GpuContext,
  layout: ModelLayout,
  b: EvalBuffers,
  scope: BufferScope,
  chunk: number,
): EvalForwardBuilder {
  const { z, a } = mlpActivations(scope, layout, chunk);
  return (rows) => ({
    dispatches: mlpForward(ctx, layout, { x: b.x, z, a }, b.params, rows),
    logits: z[z.length - 1]!,
  });
}

/** Widest layer of the MLP in floats per row (input included), for sizing evaluation chunks. */
export function mlpWidest(layout: ModelLayout): number {
  return Math.max(layout.inputSize, ...layout.layers.map((l) => l.outputs));
}
