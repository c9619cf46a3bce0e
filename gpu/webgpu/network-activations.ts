import type { ModelLayout, ModelOp } from '../../federation/index.ts';
import type { BufferScope } from './buffer-scope.ts';

/*
 * Where the generic sequential path keeps its activations: [rows][op.outputSize] per op, NCHW.
 * Flatten and a final softmax move no data: their output is their input buffer.
 */

/** Index of the op whose output is the logits: the last op, or the one before a final softmax. */
export function logitsOp(layout: ModelLayout): number {
  const last = layout.ops.length - 1;
  return layout.ops[last]!.layer.type === 'softmax' ? last - 1 : last;
}

/** Whether an op writes a new activation (flatten and softmax pass their input through). */
function writesOutput(op: ModelOp): boolean {
  const type = op.layer.type;
  return type !== 'flatten' && type !== 'softmax';
}

/** Where each op reads and writes its activations. */
export interface Activations {
  /** Input of op i. */
  readonly input: (i: number) => GPUBuffer;
  /** Output of op i (its input for flatten and softmax). */
  readonly output: (i: number) => GPUBuffer;
  /** Argmax of pooling op i. */
  readonly argmax: (i: number) => GPUBuffer;
}

/**
 * Activations for `rows` rows where every op keeps its own output (training needs them all for the
 * backward pass) and every pooling op its argmax; op 0 reads `x`.
 */
export function keptActivations(
  scope: BufferScope,
  layout: ModelLayout,
  x: GPUBuffer,
  rows: number,
): Activations {
  const outputs: GPUBuffer[] = [];
  const argmax = new Map<number, GPUBuffer>();
  const top = logitsOp(layout);
  for (let i = 0; i <= top; i++) {
    const op = layout.ops[i]!;
    const input = i === 0 ? x : outputs[i - 1]!;
    outputs.push(writesOutput(op) ? scope.storage(rows * op.outputSize * 4, `op ${i} output`) : input);
    if (op.layer.type === 'maxpool2d')
      argmax.set(i, scope.storage(rows * op.outputSize * 4, `op ${i} argmax`));
  }
  return {
    input: (i) => (i === 0 ? x : outputs[i - 1]!),
    output: (i) => outputs[i]!,
    argmax: (i) => argmax.get(i)!,
  };
}

/**
 * Activations for `rows` rows in two buffers used alternately and one argmax scratch (a forward
 * pass that keeps nothing, as evaluation); op 0 reads `x`.
 */
export function pingPongActivations(
  scope: BufferScope,
  layout: ModelLayout,
  x: GPUBuffer,
  rows: number,
): Activations {
  const top = logitsOp(layout);
  const ops = layout.ops.slice(0, top + 1);
  const widest = Math.max(...ops.map((op) => op.outputSize));
  const pooled = Math.max(1, ...ops.map((op) => (op.layer.type === 'maxpool2d' ? op.outputSize : 0)));
  const pair = [
    scope.storage(rows * widest * 4, 'activations a'),
    scope.storage(rows * widest * 4, 'activations b'),
  ];
  const argmax = scope.storage(rows * pooled * 4, 'pool argmax');
  const outputs: GPUBuffer[] = [];
  let next = 0;
  ops.forEach((op, i) => {
    const input = i === 0 ? x : outputs[i - 1]!;
    if (writesOutput(op)) {
      outputs.push(pair[next]!);
      next = 1 - next;
    } else {
      outputs.push(input);
    }
  });
  return {
    input: (i) => (i === 0 ? x : outputs[i - 1]!),
    output: (i) => outputs[i]!,
    argmax: () => argmax,
  };
}

/** Floats per row the evaluation of `layout` allocates (two activation buffers and the argmax). */
export function networkEvalRowFloats(layout: ModelLayout): number {
  const ops = layout.ops.slice(0, logitsOp(layout) + 1);
  const pooled = Math.max(0, ...ops.map((op) => (op.layer.type === 'maxpool2d' ? op.outputSize : 0)));
  return 2 * networkWidest(layout) + pooled + layout.inputSize;
}

/** Widest activation of `layout` in floats per row (input included): the largest one buffer holds. */
export function networkWidest(layout: ModelLayout): number {
  const ops = layout.ops.slice(0, logitsOp(layout) + 1);
  return Math.max(layout.inputSize, ...ops.map((op) => op.outputSize));
}
