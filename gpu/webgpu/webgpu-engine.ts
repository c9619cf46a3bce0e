import {
  assertSumFinite,
  checkQuantizeParams,
  counterKey,
  denseWidths,
  type ModelSpec,
  type QuantizeParams,
  type QuantizeResult,
} from '../../federation/index.ts';
import { assertModelInputs, assertTrainConfig } from '../cpu/index.ts';
import type {
  Dataset,
  EvalResult,
  Kernels,
  TrainConfig,
  TrainingEngine,
  TrainResult,
} from '../engine/index.ts';
import { BufferScope } from './buffer-scope.ts';
import { evaluateOnGpu } from './evaluate-loop.ts';
import type { GpuContext } from './gpu-context.ts';
import { mlpEvalForward, mlpTrainStep, mlpWidest } from './mlp-programs.ts';
import { networkEvalRowFloats, networkWidest } from './network-activations.ts';
import { networkEvalForward, networkTrainStep } from './network-programs.ts';
import { quantizeDispatch } from './quantize-kernels.ts';
import { trainOnGpu } from './train-loop.ts';
import { createWebGpuKernels } from './webgpu-kernels.ts';

/** Rows per evaluation chunk. */
const EVAL_CHUNK = 2048;
/** Activation memory of one evaluation chunk of a convolutional network (256 MiB). */
const EVAL_NETWORK_BYTES = 256 * 2 ** 20;

/**
 * The WebGPU training engine: parameters, velocity, anchor, activations and gradients stay on the
 * GPU during `train`; each mini-batch (gathered on the CPU in `batchOrder` order) is uploaded and
 * its forward, backward and optimizer kernels run in one command buffer; only the per-batch losses
 * and the final parameters are read back (see `trainOnGpu`). The host yields while it waits for
 * the GPU. With `config.signal` or `config.stopAtUnixMs` it keeps fewer steps in flight, each
 * followed by a parameter snapshot, so it stops like the CPU engine (see `StoppableSteps`). MLPs
 * (`denseWidths(spec)` non-null) take the dense fast path (`mlp-programs.ts`); any other model
 * (convolutions, pooling) runs op by op (`network-programs.ts`). Create it with
 * `createWebGpuEngine`.
 */
export class WebGpuEngine implements TrainingEngine {
  readonly kind = 'webgpu' as const;
  readonly description: string;
  readonly kernels: Kernels;
  readonly #ctx: GpuContext;

  constructor(ctx: GpuContext, description: string) {
    this.#ctx = ctx;
    this.description = description;
    this.kernels = createWebGpuKernels(ctx);
  }

  async train(
    spec: ModelSpec,
    initial: Float32Array,
    data: Dataset,
    config: TrainConfig,
  ): Promise<TrainResult> {
    assertTrainConfig(config);
    const layout = assertModelInputs(spec, initial, 'initial', data);
    const ctx = this.#ctx;
    const step = denseWidths(spec) !== null ? mlpTrainStep : networkTrainStep;
    return trainOnGpu(ctx, initial, data, config, (buffers, scope, batch) =>
      step(ctx, layout, buffers, scope, batch),
    );
  }

  async evaluate(spec: ModelSpec, parameters: Float32Array, data: Dataset): Promise<EvalResult> {
    const layout = assertModelInputs(spec, parameters, 'parameters', data);
    const ctx = this.#ctx;
    const mlp = denseWidths(spec) !== null;
    const widest = mlp ? mlpWidest(layout) : networkWidest(layout);
    const limitRows = Math.floor(ctx.device.limits.maxStorageBufferBindingSize / (widest * 4));
    const budgetRows = mlp ? EVAL_CHUNK : Math.floor(EVAL_NETWORK_BYTES / (networkEvalRowFloats(layout) * 4));
    const chunk = Math.max(1, Math.min(data.count, EVAL_CHUNK, limitRows, budgetRows));
    const forward = mlp ? mlpEvalForward : networkEvalForward;
    return evaluateOnGpu(ctx, parameters, data, layout.classes, chunk, (buffers, scope, rows) =>
      forward(ctx, layout, buffers, scope, rows),
    );
  }

  async quantize(
    update: Float32Array,
    residual: Float32Array | null,
    params: QuantizeParams,
  ): Promise<QuantizeResult> {
    const { grid, counterBase } = checkQuantizeParams(update, residual, params);
    const n = update.length;
    assertSumFinite(update, residual);
    if (n === 0) return { levels: new Uint8Array(0), residual: new Float32Array(0) };
    const ctx = this.#ctx;
    const scope = new BufferScope(ctx);
    try {
      return await ctx.scoped('quantize', async () => {
        const u = scope.upload(update, 'update');
        const r = residual === null ? null : scope.upload(residual, 'residual');
        const levels = scope.storage(n * 4, 'levels');
        const residualOut = scope.storage(n * 4, 'residual out');
        ctx.submit([
          quantizeDispatch(
            ctx,
            { update: u, residual: r, levels, residualOut },
            {
              n,
              key: counterKey(params.seed.key0, params.seed.key1),
              key1: params.seed.key1,
              counterBase,
              maxLevel: grid.maxLevel,
              clip: grid.clip,
              step: grid.step,
              inverseStep: grid.inverseStep,
            },
          ),
        ]);
        const [levelBytes, residualBytes] = await ctx.read([
          { buffer: levels, byteLength: n * 4 },
          { buffer: residualOut, byteLength: n * 4 },
        ]);
        return {
          levels: Uint8Array.from(new Uint32Array(levelBytes!)),
          residual: new Float32Array(residualBytes!),
        };
      });
    } finally {
      scope.destroy();
    }
  }

  async dispose(): Promise<void> {
    this.#ctx.destroy();
  }
}
