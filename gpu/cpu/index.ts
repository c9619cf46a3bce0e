/**
 * The CPU training engine: a single-threaded TypeScript reference for {@link TrainingEngine}, and
 * the loops it is built from, reusable by other engines and tests.
 */
export { assertModelInputs } from './assert-model-inputs.ts';
export {
  assertAbortSignal,
  assertLearningRate,
  assertMomentum,
  assertProximalMu,
  assertTrainConfig,
  assertUnixMs,
} from './assert-train-config.ts';
export { createCpuEngine, EVAL_BATCH } from './cpu-engine.ts';
export { cpuKernels } from './cpu-kernels.ts';
export { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
export { evaluateModel } from './evaluate-model.ts';
export {
  assertDenseShape,
  assertKernelArray,
  assertKernelDimension,
  assertSgdStepInputs,
  assertSoftmaxInputs,
} from './kernel-inputs.ts';
export { backwardBatch, forwardBatch, loadBatch } from './mlp-pass.ts';
export { createMlpWorkspace, type MlpWorkspace, workspaceFits } from './mlp-workspace.ts';
export {
  createNonZeroRows,
  indexNonZero,
  type NonZeroRows,
  SPARSE_DENSITY_LIMIT,
} from './non-zero-rows.ts';
export { reluBackwardInto, reluInto } from './relu.ts';
export { sgdStepInto } from './sgd-step.ts';
export { countCorrect, softmaxCrossEntropyInto } from './softmax-cross-entropy.ts';
export { trainSgd } from './train-sgd.ts';
export { YIELD_EVERY_MS, yieldToEventLoop } from './yield-to-event-loop.ts';
