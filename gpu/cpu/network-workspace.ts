import type { ModelLayout } from '../../federation/index.ts';
import { type Conv2dScratch, conv2dGeometry, createConv2dScratch } from './conv2d.ts';
import { createNonZeroRows, type NonZeroRows } from './non-zero-rows.ts';

/**
 * Every buffer one forward/backward pass of a sequential model (any layout: convolutions, pooling,
 * dense layers) needs for up to `batch` rows, allocated once per (model, batch size) and reused
 * for every mini-batch.
 *
 * Buffer sharing: flatten and softmax pass their input through (the same array), ReLU works in
 * place (its output is its input array: no layer's backward needs the pre-activation of the next
 * ReLU, and ReLU's own backward masks on the output, > 0 exactly where the input was), every other
 * layer writes a fresh array. Gradients flow through two ping-pong arrays.
 */
export interface NetworkWorkspace {
  readonly layout: ModelLayout;
  /** Row capacity; a smaller last batch uses a prefix of each buffer. */
  readonly batch: number;
  /** Whether gradient buffers exist (`false` for evaluation-only workspaces). */
  readonly training: boolean;
  /** The mini-batch's inputs [batch][inputSize] (CHW per sample for an image input). */
  readonly input: Float32Array;
  /** The mini-batch's labels. */
  readonly labels: Uint8Array;
  /** Per op (`layout.ops`): its output [batch][outputSize] (possibly an alias, see above). */
  readonly outputs: readonly Float32Array[];
  /** Per op: the argmax of a maxpool2d, else an empty array. */
  readonly argmax: readonly Uint32Array[];
  /** Per op: the scratch of a conv2d, else null. */
  readonly conv: readonly (Conv2dScratch | null)[];
  /** Per op: the non-zero columns of a dense layer's input (filled by the forward pass), else null. */
  readonly denseRows: readonly (NonZeroRows | null)[];
  /** Per op: the non-zero fraction of a dense layer's input in the current batch. */
  readonly denseDensity: number[];
  /** Index of the op whose output is the logits (the last dense layer). */
  readonly logitsOp: number;
  /** Index of the first parameterized op: the backward pass stops there (no ∂L/∂input needed). */
  readonly firstParameterizedOp: number;
  /** Two gradient arrays of batch × the largest activation (training only). */
  readonly delta: readonly [Float32Array, Float32Array];
  /** Non-zero columns of a dense layer's output gradient (training only; sized for the widest). */
  readonly deltaRows: NonZeroRows;
  /** Gradient of the flat parameter vector (training only). */
  readonly grad: Float32Array;
  /** Momentum velocity of the flat parameter vector (training only). */
  readonly velocity: Float32Array;
}

/** Allocates a {@link NetworkWorkspace} for `layout` and up to `batch` rows. */
export function createNetworkWorkspace(
  layout: ModelLayout,
  batch: number,
  training: boolean,
): NetworkWorkspace {
  const input = new Float32Array(batch * layout.inputSize);
  const outputs: Float32Array[] = [];
  const argmax: Uint32Array[] = [];
  const conv: (Conv2dScratch | null)[] = [];
  const denseRows: (NonZeroRows | null)[] = [];
  let current = input;
  let widest = layout.inputSize;
  let widestDense = 1;
  let logitsOp = -1;
  let firstParameterizedOp = -1;
  for (const [i, op] of layout.ops.entries()) {
    const layer = op.layer;
    widest = Math.max(widest, op.outputSize);
    if (op.slice !== null && firstParameterizedOp < 0) firstParameterizedOp = i;
    let scratch: Conv2dScratch | null = null;
    let rows: NonZeroRows | null = null;
    let pool = new Uint32Array(0);
    if (layer.type === 'conv2d') {
      const [channels, height, width] = op.inputShape as [number, number, number];
      const g = conv2dGeometry(channels, height, width, layer.filters, layer.kernel, layer.padding);
      scratch = createConv2dScratch(g, batch, training);
    } else if (layer.type === 'dense') {
      rows = createNonZeroRows(batch, op.inputSize);
      widestDense = Math.max(widestDense, op.outputSize);
      logitsOp = i;
    } else if (layer.type === 'maxpool2d') {
      pool = new Uint32Array(batch * op.outputSize);
    }
    const passThrough = layer.type === 'flatten' || layer.type === 'softmax' || layer.type === 'relu';
    if (!passThrough) current = new Float32Array(batch * op.outputSize);
    outputs.push(current);
    argmax.push(pool);
    conv.push(scratch);
    denseRows.push(rows);
  }
  const deltaSize = training ? batch * widest : 0;
  return {
    layout,
    batch,
    training,
    input,
    labels: new Uint8Array(batch),
    outputs,
    argmax,
    conv,
    denseRows,
    denseDensity: layout.ops.map(() => 1),
    logitsOp,
    firstParameterizedOp,
    delta: [new Float32Array(deltaSize), new Float32Array(deltaSize)],
    deltaRows: training ? createNonZeroRows(batch, widestDense) : createNonZeroRows(0, 0),
    grad: new Float32Array(training ? layout.parameterCount : 0),
    velocity: new Float32Array(training ? layout.parameterCount : 0),
  };
}
