import type { Dataset, TrainConfig, TrainResult } from '../engine/index.ts';
import { batchOrder, trainCanStop } from '../engine/index.ts';
import { BufferScope } from './buffer-scope.ts';
import type { Dispatch, GpuContext } from './gpu-context.ts';
import { sgdDispatch } from './sgd-kernels.ts';
import { lossMeanDispatch, lossMeanFields } from './softmax-kernels.ts';
import { type KeptSteps, StoppableSteps, stoppableDepth } from './stoppable-steps.ts';

/** Batches submitted before waiting for the GPU to catch up (bounds queued upload memory). */
const SUBMITS_IN_FLIGHT = 64;

/** The buffers every model's training step shares; the model adds its activations and gradients. */
export interface TrainBuffers {
  /** The flat parameter vector, updated in place by every step. */
  readonly params: GPUBuffer;
  /** ∂L/∂params of the current mini-batch; the model's backward pass must write every entry. */
  readonly grad: GPUBuffer;
  /** The mini-batch's features [rows][featureCount] (gathered in `batchOrder` order). */
  readonly x: GPUBuffer;
  /** The mini-batch's labels, one u32 per row. */
  readonly labels: GPUBuffer;
  /** Per-row loss, written by the model's softmax cross-entropy dispatch. */
  readonly rowLoss: GPUBuffer;
  /** Per-row arg-max class, written by the same dispatch (unused by training). */
  readonly predicted: GPUBuffer;
}

/**
 * A model's forward, softmax cross-entropy (into `rowLoss`, gradient scaled 1/rows) and backward
 * dispatches (every entry of `grad`) for a mini-batch of `rows` rows; called once per distinct row
 * count, the dispatches reused for every mini-batch of that size.
 */
export type TrainStepBuilder = (rows: number) => readonly Dispatch[];

/**
 * Runs `config.epochs` epochs of mini-batch SGD (momentum, FedProx) on the GPU with the model's
 * step from `build` (given the shared buffers, the call's scope and the largest mini-batch): each
 * mini-batch is gathered on the host in {@link batchOrder} order, uploaded, and its step, the loss
 * sum and the optimizer update run in one command buffer; parameters, velocity and anchor stay on
 * the GPU; only the per-step losses and the final parameters are read back. Stops like the CPU
 * engine when `config` can stop (see {@link StoppableSteps}). Inputs are already validated.
 */
export async function trainOnGpu(
  ctx: GpuContext,
  initial: Float32Array,
  data: Dataset,
  config: TrainConfig,
  build: (buffers: TrainBuffers, scope: BufferScope, batch: number) => TrainStepBuilder,
): Promise<TrainResult> {
  const features = data.featureCount;
  const count = data.count;
  const batch = Math.min(config.batchSize, count);
  const maxSteps = config.epochs * Math.ceil(count / config.batchSize);
  const parameterCount = initial.length;
  const scope = new BufferScope(ctx);
  try {
    return await ctx.scoped('train', async () => {
      const params = scope.upload(initial, 'parameters');
      const anchor = scope.upload(initial, 'anchor');
      const velocity = scope.storage(initial.byteLength, 'velocity');
      const buffers: TrainBuffers = {
        params,
        grad: scope.storage(initial.byteLength, 'gradient'),
        x: scope.storage(batch * features * 4, 'batch features'),
        labels: scope.storage(batch * 4, 'batch labels'),
        rowLoss: scope.storage(batch * 4, 'row loss'),
        predicted: scope.storage(batch * 4, 'row prediction'),
      };
      const losses = scope.storage(maxSteps * 4, 'batch losses');
      const hyper = { learningRate: config.learningRate, momentum: config.momentum, mu: config.proximalMu };
      const step = build(buffers, scope, batch);
      const programs = new Map<number, { dispatches: Dispatch[]; lossUniform: GPUBuffer }>();
      const program = (rows: number) => {
        let p = programs.get(rows);
        if (p === undefined) {
          const loss = lossMeanDispatch(ctx, buffers.rowLoss, losses, rows);
          const sgd = sgdDispatch(
            ctx,
            { w: params, velocity, grad: buffers.grad, anchor },
            parameterCount,
            hyper,
          );
          p = { dispatches: [...step(rows), loss.dispatch, sgd], lossUniform: loss.uniform };
          programs.set(rows, p);
        }
        return p;
      };

      const xHost = new Float32Array(batch * features);
      const labelHost = new Uint32Array(batch);
      const queue = ctx.device.queue;
      const stoppable = trainCanStop(config)
        ? new StoppableSteps(
            ctx,
            params,
            Array.from({ length: stoppableDepth(initial.byteLength) }, (_, i) =>
              scope.storage(initial.byteLength, `parameter snapshot ${i}`),
            ),
            initial.byteLength,
            config,
            maxSteps,
          )
        : null;
      let steps = 0;
      epochs: for (let epoch = 0; epoch < config.epochs; epoch++) {
        const order = batchOrder(count, config.shuffleSeed, epoch);
        for (let start = 0; start < count; start += batch) {
          if (stoppable !== null && (await stoppable.stopBeforeNext())) break epochs;
          const rows = Math.min(batch, count - start);
          for (let r = 0; r < rows; r++) {
            const row = order[start + r]!;
            xHost.set(data.features.subarray(row * features, (row + 1) * features), r * features);
            labelHost[r] = data.labels[row]!;
          }
          queue.writeBuffer(buffers.x, 0, xHost.buffer, 0, rows * features * 4);
          queue.writeBuffer(buffers.labels, 0, labelHost.buffer, 0, rows * 4);
          const p = program(rows);
          ctx.writeUniform(p.lossUniform, lossMeanFields(rows, steps));
          steps++;
          if (stoppable !== null) {
            stoppable.submit(p.dispatches, rows);
          } else {
            ctx.submit(p.dispatches);
            if (steps % SUBMITS_IN_FLIGHT === 0) {
              await queue.onSubmittedWorkDone();
              ctx.assertAlive();
            }
          }
        }
      }
      const kept: KeptSteps =
        stoppable === null
          ? { parameters: params, steps: maxSteps, samples: config.epochs * count, stopped: 'complete' }
          : await stoppable.finish();
      // Queued after every submitted step: the reads see their results.
      const [paramBytes, lossBytes] = await ctx.read([
        { buffer: kept.parameters, byteLength: initial.byteLength },
        { buffer: losses, byteLength: kept.steps * 4 },
      ]);
      // Σ over the kept batches of each batch's f32 loss sum, in float64: the mean over their samples.
      let sum = 0;
      for (const l of new Float32Array(lossBytes!)) sum += l;
      return {
        parameters: new Float32Array(paramBytes!),
        meanLoss: kept.samples === 0 ? 0 : sum / kept.samples,
        samples: kept.samples,
        steps: kept.steps,
        stopped: kept.stopped,
      };
    });
  } finally {
    scope.destroy();
  }
}
