import { type ModelLayout, type ModelSpec, quantize } from '../../federation/index.ts';
import type { Dataset, EvalResult, TrainConfig, TrainingEngine, TrainResult } from '../engine.ts';
import { assertModelInputs } from './assert-model-inputs.ts';
import { assertTrainConfig } from './assert-train-config.ts';
import { cpuKernels } from './cpu-kernels.ts';
import { evaluateModel } from './evaluate-model.ts';
import { createMlpWorkspace, type MlpWorkspace, workspaceFits } from './mlp-workspace.ts';
import { trainSgd } from './train-sgd.ts';

/** Rows per forward pass in `evaluate`. */
export const EVAL_BATCH = 256;

/**
 * The CPU reference engine: plain TypeScript on one thread, float32 storage with float64 dot
 * products. `train` reuses one workspace per (model, batch size) across calls, so a simulation's
 * many rounds allocate little beyond the returned parameters (concurrent calls get their own).
 * `train` yields to the event loop every few milliseconds and can be cut short by an abort signal
 * or a deadline (see {@link trainSgd}). Every method validates its inputs (lengths named,
 * finiteness checked) and reports errors as rejections.
 */
export function createCpuEngine(): TrainingEngine {
  let trainWs: MlpWorkspace | null = null;
  let evalWs: MlpWorkspace | null = null;

  const workspace = (layout: ModelLayout, batch: number, training: boolean): MlpWorkspace => {
    const cached = training ? trainWs : evalWs;
    if (cached !== null && workspaceFits(cached, layout, batch, training)) return cached;
    const ws = createMlpWorkspace(layout, batch, training);
    if (training) trainWs = ws;
    else evalWs = ws;
    return ws;
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
      const ws = workspace(layout, Math.min(config.batchSize, data.count), true);
      // Training yields to the event loop, so a concurrent call must not get the same buffers.
      trainWs = null;
      try {
        return await trainSgd(layout, initial, data, config, ws);
      } finally {
        trainWs = ws;
      }
    },

    async evaluate(spec: ModelSpec, parameters: Float32Array, data: Dataset): Promise<EvalResult> {
      const layout = assertModelInputs(spec, parameters, 'parameters', data);
      const ws = workspace(layout, Math.min(EVAL_BATCH, data.count), false);
      return evaluateModel(parameters, data, ws);
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
