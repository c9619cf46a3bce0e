import { denseWidths, type ModelLayout, type ModelSpec, quantize } from '../../federation/index.ts';
import type { Dataset, EvalResult, TrainConfig, TrainingEngine, TrainResult } from '../engine/index.ts';
import { assertModelInputs } from './assert-model-inputs.ts';
import { assertTrainConfig } from './assert-train-config.ts';
import { cpuKernels } from './cpu-kernels.ts';
import { evaluateModel } from './evaluate-model.ts';
import { createMlpPass } from './mlp-pass.ts';
import type { ModelPass } from './model-pass.ts';
import { createNetworkPass } from './network-pass.ts';
import { trainSgd } from './train-sgd.ts';

/** Rows per forward pass in `evaluate` of an MLP. */
export const EVAL_BATCH = 256;

/**
 * Rows per forward pass in `evaluate` of any other model (convolutions): a pass of the FedAvg CNN
 * costs ≈ 10 ms per row on one core, and evaluation yields to the event loop between passes only.
 */
export const NETWORK_EVAL_BATCH = 16;

/** A model pass and what it was built for. */
interface CachedPass {
  readonly key: string;
  readonly pass: ModelPass;
}

/**
 * The pass for `spec`: the MLP fast path when `denseWidths(spec)` is non-null (dense layers with
 * ReLUs between them), else the generic sequential path (convolutions, pooling).
 */
function createPass(spec: ModelSpec, layout: ModelLayout, batch: number, training: boolean): ModelPass {
  return denseWidths(spec) !== null
    ? createMlpPass(layout, batch, training)
    : createNetworkPass(layout, batch, training);
}

/**
 * The CPU reference engine: plain TypeScript on one thread, float32 storage with float64 dot
 * products. MLPs take a fast path tuned on the MNIST 2NN; any other model (convolutions, pooling)
 * runs op by op, convolutions as im2col and the dense loops. `train` reuses one set of buffers per
 * (model, batch size) across calls, so a simulation's many rounds allocate little beyond the
 * returned parameters (concurrent calls get their own).
 * `train` and `evaluate` yield to the event loop between mini-batches once a few milliseconds of
 * computation have passed (one mini-batch of the FedAvg CNN with B = 10 takes ≈ 0.2 s on one
 * core, so that is the longest stretch then), and `train` can be cut short by an abort signal or
 * a deadline (see {@link trainSgd}). Every method validates its inputs (lengths named, finiteness
 * checked) and reports errors as rejections.
 */
export function createCpuEngine(): TrainingEngine {
  let trainWs: CachedPass | null = null;
  let evalWs: CachedPass | null = null;

  const workspace = (spec: ModelSpec, layout: ModelLayout, batch: number, training: boolean): CachedPass => {
    const key = JSON.stringify([spec.input, spec.layers, batch]);
    const cached = training ? trainWs : evalWs;
    if (cached !== null && cached.key === key) return cached;
    const made = { key, pass: createPass(spec, layout, batch, training) };
    if (training) trainWs = made;
    else evalWs = made;
    return made;
  };

  return Object.freeze({
    kind: 'cpu' as const,
    description: 'cpu: TypeScript reference (1 thread)',
    kernels: cpuKernels,

    async train(
      spec: ModelSpec,
      initial: Float32Array,
      data: Dataset,
      config: TrainConfig,
    ): Promise<TrainResult> {
      assertTrainConfig(config);
      const layout = assertModelInputs(spec, initial, 'initial', data);
      const ws = workspace(spec, layout, Math.min(config.batchSize, data.count), true);
      // Training yields to the event loop, so a concurrent call must not get the same buffers.
      trainWs = null;
      try {
        return await trainSgd(layout, initial, data, config, ws.pass);
      } finally {
        trainWs = ws;
      }
    },

    async evaluate(spec: ModelSpec, parameters: Float32Array, data: Dataset): Promise<EvalResult> {
      const layout = assertModelInputs(spec, parameters, 'parameters', data);
      const rows = denseWidths(spec) === null ? NETWORK_EVAL_BATCH : EVAL_BATCH;
      const ws = workspace(spec, layout, Math.min(rows, data.count), false);
      // Evaluation yields to the event loop too: a concurrent call gets its own buffers.
      evalWs = null;
      try {
        return await evaluateModel(parameters, data, ws.pass);
      } finally {
        evalWs = ws;
      }
    },

    async quantize(update, residual, params) {
      return quantize(update, residual, params);
    },

    async dispose(): Promise<void> {
      trainWs = null;
      evalWs = null;
    },
  } satisfies TrainingEngine);
}
