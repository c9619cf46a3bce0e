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
export {
  CONV_CHUNK_ENTRIES,
  type Conv2dGeometry,
  type Conv2dScratch,
  col2imInto,
  conv2dBackwardInto,
  conv2dForwardInto,
  conv2dGeometry,
  createConv2dScratch,
  im2colInto,
} from './conv2d.ts';
export { createCpuEngine, EVAL_BATCH, NETWORK_EVAL_BATCH } from './cpu-engine.ts';
export { cpuKernels } from './cpu-kernels.ts';
export { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
export { evaluateModel } from './evaluate-model.ts';
export {
  assertConv2dShape,
  assertDenseShape,
  assertKernelArray,
  assertKernelDimension,
  assertPoolArgmax,
  assertPoolShape,
  assertSgdStepInputs,
  assertSoftmaxInputs,
  type PlaneSize,
} from './kernel-inputs.ts';
export { maxPoolBackwardInto, maxPoolForwardInto } from './max-pool.ts';
export { backwardBatch, createMlpPass, forwardBatch, loadBatch } from './mlp-pass.ts';
export { createMlpWorkspace, type MlpWorkspace, workspaceFits } from './mlp-workspace.ts';
export type { ModelPass } from './model-pass.ts';
export { createNetworkPass, networkBackward, networkForward } from './network-pass.ts';
export { createNetworkWorkspace, type NetworkWorkspace } from './network-workspace.ts';
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
