import type { ModelSpec, QuantizeParams, QuantizeResult } from '../federation/index.ts';

/**
 * A labelled data set in memory: `count` rows of `featureCount` float32 features (row-major) and
 * one integer label per row in [0, classCount).
 */
export interface Dataset {
  readonly features: Float32Array;
  readonly labels: Uint8Array;
  readonly count: number;
  readonly featureCount: number;
  readonly classCount: number;
}

/** Local training settings of one round at one site. */
export interface TrainConfig {
  /** SGD learning rate η (> 0). */
  readonly learningRate: number;
  /** Momentum β ∈ [0, 1): v ← β·v + g; w ← w − η·v. 0 is plain SGD. Velocity starts at 0 each call. */
  readonly momentum: number;
  /** Mini-batch size B (≥ 1); the last batch of an epoch may be smaller. */
  readonly batchSize: number;
  /** Local epochs E (≥ 1). */
  readonly epochs: number;
  /**
   * FedProx proximal coefficient μ ≥ 0: the gradient gains μ·(w − w_start), keeping local models
   * near the round's starting model. 0 is FedAvg.
   */
  readonly proximalMu: number;
  /** Seed of the mini-batch order (uint32); see {@link batchOrder}. */
  readonly shuffleSeed: number;
}

/** What local training returns. */
export interface TrainResult {
  /** Parameters after training (a new array; the input is not modified). */
  readonly parameters: Float32Array;
  /** Mean per-sample training loss over all epochs (cross-entropy, without the proximal term). */
  readonly meanLoss: number;
  /** Samples processed (epochs × rows). */
  readonly samples: number;
  /** Optimizer steps taken. */
  readonly steps: number;
}

/** Evaluation of a model on a data set. */
export interface EvalResult {
  /** Mean cross-entropy. */
  readonly loss: number;
  /** Fraction of rows whose arg-max prediction equals the label. */
  readonly accuracy: number;
  readonly count: number;
}

/**
 * The primitives both engines implement, exposed so tests can compare them one by one.
 * Shapes: x is [batch][inputs], W is [outputs][inputs], y is [batch][outputs], all row-major.
 */
export interface Kernels {
  /** y = x·Wᵀ + b. */
  denseForward(
    x: Float32Array,
    w: Float32Array,
    b: Float32Array,
    batch: number,
    inputs: number,
    outputs: number,
  ): Promise<Float32Array>;
  /** Given dy = ∂L/∂y: dx = dy·W, dW = dyᵀ·x, db = Σ_batch dy. */
  denseBackward(
    x: Float32Array,
    w: Float32Array,
    dy: Float32Array,
    batch: number,
    inputs: number,
    outputs: number,
  ): Promise<{ dx: Float32Array; dw: Float32Array; db: Float32Array }>;
  /** max(x, 0) element-wise. */
  relu(x: Float32Array): Promise<Float32Array>;
  /** dy where the pre-activation x > 0, else 0. */
  reluBackward(x: Float32Array, dy: Float32Array): Promise<Float32Array>;
  /** Mean softmax cross-entropy over the batch and its gradient (softmax − one-hot) / batch. */
  softmaxCrossEntropy(
    logits: Float32Array,
    labels: Uint8Array,
    batch: number,
    classes: number,
  ): Promise<{ loss: number; dlogits: Float32Array }>;
  /**
   * One SGD-with-momentum step with the FedProx term: g' = g + μ·(w − anchor); v ← β·v + g';
   * w ← w − η·v. Returns new arrays.
   */
  sgdStep(
    w: Float32Array,
    grad: Float32Array,
    velocity: Float32Array,
    anchor: Float32Array,
    learningRate: number,
    momentum: number,
    mu: number,
  ): Promise<{ w: Float32Array; velocity: Float32Array }>;
}

/**
 * A training engine: the CPU reference (plain TypeScript) or WebGPU (WGSL kernels via Dawn).
 * Both give the same results within the tolerances stated in their tests, and the quantizer gives
 * identical integers. Methods validate their inputs (lengths named, finiteness checked).
 */
export interface TrainingEngine {
  readonly kind: 'cpu' | 'webgpu';
  /** What it runs on, e.g. "cpu: TypeScript reference" or "webgpu: NVIDIA H200 (vulkan)". */
  readonly description: string;
  readonly kernels: Kernels;
  /** Trains `initial` on `data` and returns new parameters. */
  train(spec: ModelSpec, initial: Float32Array, data: Dataset, config: TrainConfig): Promise<TrainResult>;
  /** Loss and accuracy of `parameters` on `data`. */
  evaluate(spec: ModelSpec, parameters: Float32Array, data: Dataset): Promise<EvalResult>;
  /** The error-feedback quantizer (identical integers to `federation/quantize`). */
  quantize(
    update: Float32Array,
    residual: Float32Array | null,
    params: QuantizeParams,
  ): Promise<QuantizeResult>;
  /** Frees device resources. */
  dispose(): Promise<void>;
}
