import {
  assertSumFinite,
  checkQuantizeParams,
  counterKey,
  type ModelSpec,
  modelLayout,
  type QuantizeParams,
  type QuantizeResult,
} from '../../federation/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { batchOrder } from '../batch-order.ts';
import {
  assertDenseShape,
  assertKernelArray,
  assertModelInputs,
  assertSgdStepInputs,
  assertSoftmaxInputs,
  assertTrainConfig,
} from '../cpu/index.ts';
import type { Dataset, EvalResult, Kernels, TrainConfig, TrainingEngine, TrainResult } from '../engine.ts';
import { trainCanStop } from '../train-stop.ts';
import { reluBackwardDispatch, reluDispatch } from './activation-kernels.ts';
import {
  denseBiasGradDispatch,
  denseForwardDispatch,
  denseInputGradDispatch,
  denseWeightGradDispatch,
} from './dense-kernels.ts';
import type { Dispatch, GpuContext } from './gpu-context.ts';
import { quantizeDispatch } from './quantize-kernels.ts';
import { sgdDispatch } from './sgd-kernels.ts';
import { lossMeanDispatch, lossMeanFields, softmaxDispatch, softmaxFields } from './softmax-kernels.ts';
import { type KeptSteps, StoppableSteps, stoppableDepth } from './stoppable-steps.ts';

const _UINT32_MAX = 0xffff_ffff;
/** Batches submitted before waiting for the GPU to catch up (bounds queued upload memory). */
const SUBMITS_IN_FLIGHT = 64;
/** Rows per evaluation chunk. */
const EVAL_CHUNK = 2048;

/** Buffers created for one call; all destroyed when it ends. */
class BufferScope {
  readonly #ctx: GpuContext;
  readonly #buffers: GPUBuffer[] = [];
  constructor(ctx: GpuContext) {
    this.#ctx = ctx;
  }
  storage(bytes: number, label: string): GPUBuffer {
    this.#checkSize(bytes, label);
    return this.#track(this.#ctx.storage(bytes, label));
  }
  upload(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    this.#checkSize(data.byteLength, label);
    return this.#track(this.#ctx.upload(data, label));
  }
  /** Tracks a buffer created elsewhere (uniforms made by the dispatch helpers are small and collected). */
  #track(buffer: GPUBuffer): GPUBuffer {
    this.#buffers.push(buffer);
    return buffer;
  }
  #checkSize(bytes: number, label: string): void {
    const limit = this.#ctx.device.limits.maxStorageBufferBindingSize;
    if (bytes > limit) {
      throw new InvalidArgumentError(
        `${label} needs ${bytes} bytes, more than this GPU's storage binding limit of ${limit} bytes`,
        { details: { name: label, bytes, limit } },
      );
    }
  }
  destroy(): void {
    for (const b of this.#buffers) b.destroy();
    this.#buffers.length = 0;
  }
}

function floats(data: ArrayBuffer): Float32Array {
  return new Float32Array(data);
}

function labelsU32(labels: Uint8Array): Uint32Array {
  return Uint32Array.from(labels);
}

/**
 * The WebGPU training engine: parameters, velocity, anchor, activations and gradients stay on the
 * GPU during `train`; each mini-batch (gathered on the CPU in {@link batchOrder} order) is uploaded
 * and its forward, backward and optimizer kernels run in one command buffer; only the per-batch
 * losses and the final parameters are read back. The host yields while it waits for the GPU. With
 * `config.signal` or `config.stopAtUnixMs` it keeps fewer steps in flight, each followed by a
 * parameter snapshot, so it stops like the CPU engine (see {@link StoppableSteps}). Create it with
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
    this.kernels = makeKernels(ctx);
  }

  async train(
    spec: ModelSpec,
    initial: Float32Array,
    data: Dataset,
    config: TrainConfig,
  ): Promise<TrainResult> {
    assertTrainConfig(config);
    assertModelInputs(spec, initial, 'initial', data);
    const ctx = this.#ctx;
    const layout = modelLayout(spec);
    const layers = layout.layers;
    const depth = layers.length;
    const classes = spec.layers[spec.layers.length - 1]!;
    const features = data.featureCount;
    const count = data.count;
    const batch = Math.min(config.batchSize, count);
    const batchesPerEpoch = Math.ceil(count / config.batchSize);
    const maxSteps = config.epochs * batchesPerEpoch;
    const scope = new BufferScope(ctx);
    try {
      return await ctx.scoped('train', async () => {
        const params = scope.upload(initial, 'parameters');
        const anchor = scope.upload(initial, 'anchor');
        const velocity = scope.storage(initial.byteLength, 'velocity');
        const grad = scope.storage(initial.byteLength, 'gradient');
        const x = scope.storage(batch * features * 4, 'batch features');
        const labels = scope.storage(batch * 4, 'batch labels');
        const z = layers.map((l, i) => scope.storage(batch * l.outputs * 4, `z${i}`));
        const a = layers.map((l, i) =>
          i + 1 < depth ? scope.storage(batch * l.outputs * 4, `a${i}`) : null,
        );
        const dz = layers.map((l, i) => scope.storage(batch * l.outputs * 4, `dz${i}`));
        const da = layers.map((l, i) =>
          i + 1 < depth ? scope.storage(batch * l.outputs * 4, `da${i}`) : null,
        );
        const rowLoss = scope.storage(batch * 4, 'row loss');
        const correct = scope.storage(batch * 4, 'row correct');
        const losses = scope.storage(maxSteps * 4, 'batch losses');
        const hyper = { learningRate: config.learningRate, momentum: config.momentum, mu: config.proximalMu };

        const programs = new Map<number, { dispatches: Dispatch[]; lossUniform: GPUBuffer }>();
        const program = (rows: number) => {
          let p = programs.get(rows);
          if (p !== undefined) return p;
          const dispatches: Dispatch[] = [];
          const input = (i: number): GPUBuffer => (i === 0 ? x : a[i - 1]!);
          layers.forEach((l, i) => {
            dispatches.push(denseForwardDispatch(ctx, input(i), params, z[i]!, { batch: rows, ...l }));
            if (i + 1 < depth) dispatches.push(reluDispatch(ctx, z[i]!, a[i]!, rows * l.outputs));
          });
          dispatches.push(
            softmaxDispatch(
              ctx,
              { logits: z[depth - 1]!, labels, dlogits: dz[depth - 1]!, rowLoss, correct },
              rows,
              classes,
            ).dispatch,
          );
          const loss = lossMeanDispatch(ctx, rowLoss, losses, rows);
          dispatches.push(loss.dispatch);
          for (let i = depth - 1; i >= 0; i--) {
            const l = layers[i]!;
            dispatches.push(denseWeightGradDispatch(ctx, dz[i]!, input(i), grad, { batch: rows, ...l }));
            dispatches.push(denseBiasGradDispatch(ctx, dz[i]!, grad, { batch: rows, ...l }));
            if (i > 0) {
              dispatches.push(denseInputGradDispatch(ctx, dz[i]!, params, da[i - 1]!, { batch: rows, ...l }));
              dispatches.push(reluBackwardDispatch(ctx, z[i - 1]!, da[i - 1]!, dz[i - 1]!, rows * l.inputs));
            }
          }
          dispatches.push(
            sgdDispatch(ctx, { w: params, velocity, grad, anchor }, layout.parameterCount, hyper),
          );
          p = { dispatches, lossUniform: loss.uniform };
          programs.set(rows, p);
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
        let step = 0;
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
            queue.writeBuffer(x, 0, xHost.buffer, 0, rows * features * 4);
            queue.writeBuffer(labels, 0, labelHost.buffer, 0, rows * 4);
            const p = program(rows);
            ctx.writeUniform(p.lossUniform, lossMeanFields(rows, step));
            step++;
            if (stoppable !== null) {
              stoppable.submit(p.dispatches, rows);
            } else {
              ctx.submit(p.dispatches);
              if (step % SUBMITS_IN_FLIGHT === 0) {
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
        for (const l of floats(lossBytes!)) sum += l;
        return {
          parameters: floats(paramBytes!),
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

  async evaluate(spec: ModelSpec, parameters: Float32Array, data: Dataset): Promise<EvalResult> {
    assertModelInputs(spec, parameters, 'parameters', data);
    const ctx = this.#ctx;
    const layers = modelLayout(spec).layers;
    const depth = layers.length;
    const classes = spec.layers[spec.layers.length - 1]!;
    const features = data.featureCount;
    const count = data.count;
    const widest = Math.max(features, ...spec.layers);
    const limitRows = Math.floor(ctx.device.limits.maxStorageBufferBindingSize / (widest * 4));
    const chunk = Math.max(1, Math.min(count, EVAL_CHUNK, limitRows));
    const scope = new BufferScope(ctx);
    try {
      return await ctx.scoped('evaluate', async () => {
        const params = scope.upload(parameters, 'parameters');
        const x = scope.storage(chunk * features * 4, 'chunk features');
        const labels = scope.storage(chunk * 4, 'chunk labels');
        const z = layers.map((l, i) => scope.storage(chunk * l.outputs * 4, `z${i}`));
        const a = layers.map((l, i) =>
          i + 1 < depth ? scope.storage(chunk * l.outputs * 4, `a${i}`) : null,
        );
        const dlogits = scope.storage(chunk * classes * 4, 'dlogits');
        const rowLoss = scope.storage(count * 4, 'row loss');
        const correct = scope.storage(count * 4, 'row correct');
        const programs = new Map<number, { dispatches: Dispatch[]; softmaxUniform: GPUBuffer }>();
        const program = (rows: number) => {
          let p = programs.get(rows);
          if (p !== undefined) return p;
          const dispatches: Dispatch[] = [];
          layers.forEach((l, i) => {
            const input = i === 0 ? x : a[i - 1]!;
            dispatches.push(denseForwardDispatch(ctx, input, params, z[i]!, { batch: rows, ...l }));
            if (i + 1 < depth) dispatches.push(reluDispatch(ctx, z[i]!, a[i]!, rows * l.outputs));
          });
          const sm = softmaxDispatch(
            ctx,
            { logits: z[depth - 1]!, labels, dlogits, rowLoss, correct },
            rows,
            classes,
          );
          dispatches.push(sm.dispatch);
          p = { dispatches, softmaxUniform: sm.uniform };
          programs.set(rows, p);
          return p;
        };
        const labelHost = labelsU32(data.labels);
        const queue = ctx.device.queue;
        for (let start = 0; start < count; start += chunk) {
          const rows = Math.min(chunk, count - start);
          queue.writeBuffer(
            x,
            0,
            data.features.buffer,
            data.features.byteOffset + start * features * 4,
            rows * features * 4,
          );
          queue.writeBuffer(labels, 0, labelHost.buffer, start * 4, rows * 4);
          const p = program(rows);
          ctx.writeUniform(p.softmaxUniform, softmaxFields(rows, classes, start));
          ctx.submit(p.dispatches);
        }
        const [lossBytes, correctBytes] = await ctx.read([
          { buffer: rowLoss, byteLength: count * 4 },
          { buffer: correct, byteLength: count * 4 },
        ]);
        let loss = 0;
        for (const l of floats(lossBytes!)) loss += l;
        let right = 0;
        for (const c of new Uint32Array(correctBytes!)) right += c;
        return { loss: loss / count, accuracy: right / count, count };
      });
    } finally {
      scope.destroy();
    }
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
        return { levels: Uint8Array.from(new Uint32Array(levelBytes!)), residual: floats(residualBytes!) };
      });
    } finally {
      scope.destroy();
    }
  }

  async dispose(): Promise<void> {
    this.#ctx.destroy();
  }
}

/** The kernel-by-kernel API: upload, one dispatch (or a few), read back; buffers freed after. */
function makeKernels(ctx: GpuContext): Kernels {
  const run = async <T>(what: string, body: (scope: BufferScope) => Promise<T>): Promise<T> => {
    const scope = new BufferScope(ctx);
    try {
      return await ctx.scoped(what, () => body(scope));
    } finally {
      scope.destroy();
    }
  };
  return {
    async denseForward(x, w, b, batch, inputs, outputs) {
      assertDenseShape(batch, inputs, outputs);
      assertKernelArray('x', x, batch * inputs, `batch ${batch} × inputs ${inputs}`);
      assertKernelArray('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
      assertKernelArray('b', b, outputs, `outputs ${outputs}`);
      return run('denseForward', async (s) => {
        const wb = new Float32Array(w.length + b.length);
        wb.set(w);
        wb.set(b, w.length);
        const xb = s.upload(x, 'x');
        const pb = s.upload(wb, 'w+b');
        const y = s.storage(batch * outputs * 4, 'y');
        ctx.submit([
          denseForwardDispatch(ctx, xb, pb, y, {
            batch,
            inputs,
            outputs,
            weightOffset: 0,
            biasOffset: w.length,
          }),
        ]);
        const [yb] = await ctx.read([{ buffer: y, byteLength: batch * outputs * 4 }]);
        return floats(yb!);
      });
    },
    async denseBackward(x, w, dy, batch, inputs, outputs) {
      assertDenseShape(batch, inputs, outputs);
      assertKernelArray('x', x, batch * inputs, `batch ${batch} × inputs ${inputs}`);
      assertKernelArray('w', w, outputs * inputs, `outputs ${outputs} × inputs ${inputs}`);
      assertKernelArray('dy', dy, batch * outputs, `batch ${batch} × outputs ${outputs}`);
      return run('denseBackward', async (s) => {
        const xb = s.upload(x, 'x');
        const wb = s.upload(w, 'w');
        const dyb = s.upload(dy, 'dy');
        const dx = s.storage(batch * inputs * 4, 'dx');
        const g = s.storage((w.length + outputs) * 4, 'dw+db');
        const shape = { batch, inputs, outputs, weightOffset: 0, biasOffset: w.length };
        ctx.submit([
          denseInputGradDispatch(ctx, dyb, wb, dx, shape),
          denseWeightGradDispatch(ctx, dyb, xb, g, shape),
          denseBiasGradDispatch(ctx, dyb, g, shape),
        ]);
        const [dxBytes, gBytes] = await ctx.read([
          { buffer: dx, byteLength: batch * inputs * 4 },
          { buffer: g, byteLength: (w.length + outputs) * 4 },
        ]);
        const all = floats(gBytes!);
        return { dx: floats(dxBytes!), dw: all.slice(0, w.length), db: all.slice(w.length) };
      });
    },
    async relu(x) {
      assertKernelArray('x', x, x?.length ?? -1, 'itself');
      if (x.length === 0) return new Float32Array(0);
      return run('relu', async (s) => {
        const xb = s.upload(x, 'x');
        const out = s.storage(x.byteLength, 'out');
        ctx.submit([reluDispatch(ctx, xb, out, x.length)]);
        const [o] = await ctx.read([{ buffer: out, byteLength: x.byteLength }]);
        return floats(o!);
      });
    },
    async reluBackward(x, dy) {
      assertKernelArray('x', x, x?.length ?? -1, 'itself');
      assertKernelArray('dy', dy, x.length, 'x');
      if (x.length === 0) return new Float32Array(0);
      return run('reluBackward', async (s) => {
        const xb = s.upload(x, 'x');
        const dyb = s.upload(dy, 'dy');
        const dx = s.storage(x.byteLength, 'dx');
        ctx.submit([reluBackwardDispatch(ctx, xb, dyb, dx, x.length)]);
        const [o] = await ctx.read([{ buffer: dx, byteLength: x.byteLength }]);
        return floats(o!);
      });
    },
    async softmaxCrossEntropy(logits, labels, batch, classes) {
      assertSoftmaxInputs(logits, labels, batch, classes);
      return run('softmaxCrossEntropy', async (s) => {
        const zb = s.upload(logits, 'logits');
        const lb = s.upload(labelsU32(labels), 'labels');
        const dz = s.storage(logits.byteLength, 'dlogits');
        const rowLoss = s.storage(batch * 4, 'row loss');
        const correct = s.storage(batch * 4, 'correct');
        const loss = s.storage(4, 'loss');
        ctx.submit([
          softmaxDispatch(ctx, { logits: zb, labels: lb, dlogits: dz, rowLoss, correct }, batch, classes)
            .dispatch,
          lossMeanDispatch(ctx, rowLoss, loss, batch).dispatch,
        ]);
        const [lossBytes, dzBytes] = await ctx.read([
          { buffer: loss, byteLength: 4 },
          { buffer: dz, byteLength: logits.byteLength },
        ]);
        return { loss: floats(lossBytes!)[0]! / batch, dlogits: floats(dzBytes!) };
      });
    },
    async sgdStep(w, grad, velocity, anchor, learningRate, momentum, mu) {
      const n = assertSgdStepInputs(w, grad, velocity, anchor, learningRate, momentum, mu);
      if (n === 0) return { w: new Float32Array(0), velocity: new Float32Array(0) };
      return run('sgdStep', async (s) => {
        const wb = s.upload(w, 'w');
        const vb = s.upload(velocity, 'velocity');
        const gb = s.upload(grad, 'grad');
        const ab = s.upload(anchor, 'anchor');
        ctx.submit([
          sgdDispatch(ctx, { w: wb, velocity: vb, grad: gb, anchor: ab }, n, { learningRate, momentum, mu }),
        ]);
        const [wBytes, vBytes] = await ctx.read([
          { buffer: wb, byteLength: w.byteLength },
          { buffer: vb, byteLength: w.byteLength },
        ]);
        return { w: floats(wBytes!), velocity: floats(vBytes!) };
      });
    },
  };
}
