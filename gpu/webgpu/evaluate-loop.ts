import type { Dataset, EvalResult } from '../engine/index.ts';
import { BufferScope } from './buffer-scope.ts';
import type { Dispatch, GpuContext } from './gpu-context.ts';
import { softmaxDispatch, softmaxFields } from './softmax-kernels.ts';

/** The buffers every model's evaluation shares. */
export interface EvalBuffers {
  /** The flat parameter vector. */
  readonly params: GPUBuffer;
  /** One chunk's features [rows][featureCount], in row order. */
  readonly x: GPUBuffer;
}

/** A model's forward pass over `rows` rows of `x`: its dispatches and the buffer its logits land in. */
export interface EvalForward {
  readonly dispatches: readonly Dispatch[];
  /** Logits [rows][classes]. */
  readonly logits: GPUBuffer;
}

/** Builds a model's forward pass for a chunk of `rows` rows; called once per distinct row count. */
export type EvalForwardBuilder = (rows: number) => EvalForward;

/**
 * Mean softmax cross-entropy, arg-max accuracy and the confusion matrix ([label][prediction],
 * ties to the first maximum) of the model on every row of `data`, `chunk` rows per forward pass
 * (uploaded straight from `data.features`), the model's forward pass from `build` (given the
 * shared buffers, the call's scope and the chunk size). Per-row losses and predictions stay on the
 * GPU until the end; they are summed and counted on the host (losses in float64). Inputs are
 * already validated.
 */
export async function evaluateOnGpu(
  ctx: GpuContext,
  parameters: Float32Array,
  data: Dataset,
  classes: number,
  chunk: number,
  build: (buffers: EvalBuffers, scope: BufferScope, chunk: number) => EvalForwardBuilder,
): Promise<EvalResult> {
  const features = data.featureCount;
  const count = data.count;
  const scope = new BufferScope(ctx);
  try {
    return await ctx.scoped('evaluate', async () => {
      const buffers: EvalBuffers = {
        params: scope.upload(parameters, 'parameters'),
        x: scope.storage(chunk * features * 4, 'chunk features'),
      };
      const labels = scope.storage(chunk * 4, 'chunk labels');
      const dlogits = scope.storage(chunk * classes * 4, 'dlogits');
      const rowLoss = scope.storage(count * 4, 'row loss');
      const predicted = scope.storage(count * 4, 'row prediction');
      const forward = build(buffers, scope, chunk);
      const programs = new Map<number, { dispatches: Dispatch[]; softmaxUniform: GPUBuffer }>();
      const program = (rows: number) => {
        let p = programs.get(rows);
        if (p === undefined) {
          const f = forward(rows);
          const sm = softmaxDispatch(
            ctx,
            { logits: f.logits, labels, dlogits, rowLoss, predicted },
            rows,
            classes,
          );
          p = { dispatches: [...f.dispatches, sm.dispatch], softmaxUniform: sm.uniform };
          programs.set(rows, p);
        }
        return p;
      };
      const labelHost = Uint32Array.from(data.labels);
      const queue = ctx.device.queue;
      for (let start = 0; start < count; start += chunk) {
        const rows = Math.min(chunk, count - start);
        queue.writeBuffer(
          buffers.x,
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
      const [lossBytes, predictedBytes] = await ctx.read([
        { buffer: rowLoss, byteLength: count * 4 },
        { buffer: predicted, byteLength: count * 4 },
      ]);
      let loss = 0;
      for (const l of new Float32Array(lossBytes!)) loss += l;
      const predictions = new Uint32Array(predictedBytes!);
      const confusion = new Uint32Array(classes * classes);
      let right = 0;
      for (let r = 0; r < count; r++) {
        const label = data.labels[r]!;
        const guess = predictions[r]!;
        confusion[label * classes + guess]!++;
        if (guess === label) right++;
      }
      return { loss: loss / count, accuracy: right / count, count, confusion };
    });
  } finally {
    scope.destroy();
  }
}
