import type { ModelLayout } from '../../federation/index.ts';
import { createNonZeroRows, type NonZeroRows } from './non-zero-rows.ts';

/**
 * Every buffer one forward/backward pass of a model needs for up to `batch` rows, allocated once
 * per (model, batch size) and reused for every mini-batch, so training allocates nothing per step.
 */
export interface MlpWorkspace {
  readonly layout: ModelLayout;
  /** Row capacity; a smaller last batch uses a prefix of each buffer. */
  readonly batch: number;
  /** Whether gradient buffers exist (`false` for evaluation-only workspaces). */
  readonly training: boolean;
  /** The mini-batch's features [batch][layers[0]], gathered in visiting order. */
  readonly input: Float32Array;
  /** The mini-batch's labels. */
  readonly labels: Uint8Array;
  /** Pre-activations z_l [batch][outputs_l] per layer; the last one holds the logits. */
  readonly pre: readonly Float32Array[];
  /** ReLU outputs a_l [batch][outputs_l] of each hidden layer l (length: layers − 1). */
  readonly post: readonly Float32Array[];
  /** Non-zero columns of each layer's input (filled by the forward pass). */
  readonly inputRows: readonly NonZeroRows[];
  /** Per layer: the non-zero fraction of its input in the current batch (set by the forward pass). */
  readonly inputDensity: number[];
  /** ∂L/∂z_l per layer (training only). */
  readonly delta: readonly Float32Array[];
  /** Non-zero columns of each delta (training only). */
  readonly deltaRows: readonly NonZeroRows[];
  /** Gradient of the flat parameter vector (training only). */
  readonly grad: Float32Array;
  /** Momentum velocity of the flat parameter vector (training only). */
  readonly velocity: Float32Array;
}

/** Allocates a {@link MlpWorkspace} for `layout` and up to `batch` rows. */
export function createMlpWorkspace(layout: ModelLayout, batch: number, training: boolean): MlpWorkspace {
  const layers = layout.layers;
  const first = layers[0]!;
  return {
    layout,
    batch,
    training,
    input: new Float32Array(batch * first.inputs),
    labels: new Uint8Array(batch),
    pre: layers.map((l) => new Float32Array(batch * l.outputs)),
    post: layers.slice(0, -1).map((l) => new Float32Array(batch * l.outputs)),
    inputRows: layers.map((l) => createNonZeroRows(batch, l.inputs)),
    inputDensity: layers.map(() => 1),
    delta: training ? layers.map((l) => new Float32Array(batch * l.outputs)) : [],
    deltaRows: training ? layers.map((l) => createNonZeroRows(batch, l.outputs)) : [],
    grad: new Float32Array(training ? layout.parameterCount : 0),
    velocity: new Float32Array(training ? layout.parameterCount : 0),
  };
}

/** Whether `ws` fits `layout` (same widths) with room for `batch` rows. */
export function workspaceFits(
  ws: MlpWorkspace,
  layout: ModelLayout,
  batch: number,
  training: boolean,
): boolean {
  if (ws.batch !== batch || ws.training !== training || ws.layout.layers.length !== layout.layers.length) {
    return false;
  }
  return layout.layers.every((l, i) => {
    const have = ws.layout.layers[i]!;
    return have.inputs === l.inputs && have.outputs === l.outputs;
  });
}
