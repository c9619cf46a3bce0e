import type { ModelSpec, QuantizeParams, QuantizeResult } from '../../federation/index.ts';

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
  /**
   * Cuts training short when aborted: the engine looks at it once before each mini-batch (never
   * after the last one), so training stops after the mini-batch running when it fires (none when
   * it is already aborted), and the result says `stopped: 'aborted'`. The promise still resolves;
   * the abort reason is not used. Omitted: training cannot be aborted. Must be an `AbortSignal`.
   */
  readonly signal?: AbortSignal;
  /**
   * Wall-clock deadline in milliseconds since the Unix epoch (the `Date.now()` scale): training
   * stops after the first mini-batch that ends at or after it, so the steps kept overrun it by at
   * most one mini-batch (the WebGPU engine may also wait for a few already-queued mini-batches whose
   * results it discards); a deadline already past when training starts means zero steps. The result
   * then says `stopped: 'deadline'`. Omitted: no deadline. Must be a finite number.
   */
  readonly stopAtUnixMs?: number;
}

/**
 * What local training returns. When it was cut short (`stopped` is not 'complete') every field
 * describes the mini-batches that actually ran, a prefix of the full run's mini-batches in order.
 */
export interface TrainResult {
  /**
   * Parameters after the last completed step (a new array; the input is not modified): a copy of
   * `initial` when no step ran. The steps that ran compute exactly what the full run computes.
   */
  readonly parameters: Float32Array;
  /**
   * Mean per-sample training loss (cross-entropy, without the proximal term) over the samples
   * actually processed; 0 when none were.
   */
  readonly meanLoss: number;
  /** Samples actually processed (epochs × rows when complete). */
  readonly samples: number;
  /** Optimizer steps actually taken (one per mini-batch). */
  readonly steps: number;
  /**
   * Why training ended: 'complete' (every epoch ran), 'deadline' (`config.stopAtUnixMs` passed) or
   * 'aborted' (`config.signal` fired). When both hold at the same mini-batch boundary, 'aborted'.
   */
  readonly stopped: 'complete' | 'deadline' | 'aborted';
}

/** Evaluation of a model on a data set. */
export interface EvalResult {
  /** Mean cross-entropy. */
  readonly loss: number;
  /** Fraction of rows whose arg-max prediction equals the label. */
  readonly accuracy: number;
  readonly count: number;
  /**
   * Row-major classes × classes counts, [label][arg-max prediction] (ties: the first maximum); its
   * diagonal sums to accuracy · count. Federated evaluation sums it across sites.
   */
  readonly confusion?: Uint32Array;
}

/**
 * Shape of a 2-D convolution, stride 1: input x [batch][channels][height][width] (NCHW, row-major),
 * weights w [filters][channels][kernel][kernel], bias b [filters], output
 * y [batch][filters][outHeight][outWidth] with outHeight = height + 2·pad − kernel + 1 (same for
 * width) and pad = (kernel − 1) / 2 for 'same' (kernel odd), 0 for 'valid'. Zero padding.
 * The same layouts as PyTorch's `nn.Conv2d` and its state dict.
 */
export interface Conv2dShape {
  readonly batch: number;
  readonly channels: number;
  readonly height: number;
  readonly width: number;
  readonly filters: number;
  readonly kernel: number;
  readonly padding: 'same' | 'valid';
}

/**
 * Shape of a max-pooling, window `size` × `size`, stride `size`, no padding: input
 * [batch][channels][height][width], output [batch][channels][⌊height/size⌋][⌊width/size⌋] (rows
 * and columns past the last whole window are dropped, as PyTorch's `nn.MaxPool2d(size)` does).
 * Ties go to the first maximum in row-major window order.
 */
export interface PoolShape {
  readonly batch: number;
  readonly channels: number;
  readonly height: number;
  readonly width: number;
  readonly size: number;
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
  /** y = conv2d(x, w) + b (see {@link Conv2dShape} for the layouts). */
  conv2dForward(x: Float32Array, w: Float32Array, b: Float32Array, shape: Conv2dShape): Promise<Float32Array>;
  /** Given dy = ∂L/∂y: dx = ∂L/∂x, dw = ∂L/∂w, db[f] = Σ over batch and positions of dy. */
  conv2dBackward(
    x: Float32Array,
    w: Float32Array,
    dy: Float32Array,
    shape: Conv2dShape,
  ): Promise<{ dx: Float32Array; dw: Float32Array; db: Float32Array }>;
  /**
   * Max-pooling forward: y, and for every output the flat index into x of the maximum chosen
   * (first maximum in row-major window order).
   */
  maxPoolForward(x: Float32Array, shape: PoolShape): Promise<{ y: Float32Array; argmax: Uint32Array }>;
  /** dx: each dy added at its argmax, zero elsewhere (length batch·channels·height·width). */
  maxPoolBackward(dy: Float32Array, argmax: Uint32Array, shape: PoolShape): Promise<Float32Array>;
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
  /**
   * Trains `initial` on `data` and returns new parameters; stops early when `config.signal` fires
   * or `config.stopAtUnixMs` passes (see {@link TrainResult.stopped}). It lets timers and I/O run
   * while it works, so `initial` and `data` must not be modified until the promise settles.
   */
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
