import type { Dataset } from '../engine/index.ts';

/**
 * One model's mini-batch computation over buffers it owns (allocated once per model and row
 * capacity, reused for every mini-batch), as the training loop and evaluation drive it: `load`,
 * then `forward`, then (training) `backward`. The MLP fast path (`mlp-pass.ts`) and the generic
 * sequential path (`network-pass.ts`) both implement it. Nothing here validates: the engine's
 * boundary checks the model, the parameters and the data first. Not reentrant: one mini-batch at
 * a time.
 */
export interface ModelPass {
  /** Row capacity: `load` takes at most this many rows. */
  readonly batch: number;
  /** Whether `backward`, `grad` and `velocity` are available. */
  readonly training: boolean;
  /** Labels of the loaded rows. */
  readonly labels: Uint8Array;
  /** Gradient of the flat parameter vector, overwritten by `backward` (length 0 unless training). */
  readonly grad: Float32Array;
  /** Momentum velocity of the flat parameter vector, owned by the training loop (length 0 unless training). */
  readonly velocity: Float32Array;
  /** Copies rows `order[start … start + n)` of `data` (rows start … start + n − 1 when `order` is null) in. */
  load(data: Dataset, order: Uint32Array | null, start: number, n: number): void;
  /** Forward pass of the `n` loaded rows with parameters `w`; returns their logits [n][classes] (a view, valid until the next call). */
  forward(w: Float32Array, n: number): Float32Array;
  /**
   * After `forward` with the same `w` and `n`: writes the gradient of the MEAN softmax
   * cross-entropy of the `n` rows into `grad` (every entry) and returns the SUM of their losses.
   */
  backward(w: Float32Array, n: number): number;
}
