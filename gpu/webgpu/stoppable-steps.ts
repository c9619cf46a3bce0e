import type { TrainConfig, TrainResult } from '../engine/index.ts';
import { trainStopReason } from '../engine/index.ts';
import type { Dispatch, GpuContext } from './gpu-context.ts';

/** Most steps a stoppable `train` keeps submitted but not yet seen complete. */
export const STOPPABLE_IN_FLIGHT = 8;
/** Memory for parameter snapshots above which fewer steps are kept in flight. */
const SNAPSHOT_BUDGET_BYTES = 256 * 2 ** 20;

/**
 * Steps in flight for a model of `parameterBytes`: {@link STOPPABLE_IN_FLIGHT}, fewer when their
 * snapshots would pass 256 MiB, but at least 2 so the GPU has the next batch while the host waits.
 */
export function stoppableDepth(parameterBytes: number): number {
  const fit = Math.floor(SNAPSHOT_BUDGET_BYTES / Math.max(1, parameterBytes));
  return Math.max(2, Math.min(STOPPABLE_IN_FLIGHT, fit));
}

/** What a stoppable run kept: the buffer holding its parameters, and the steps they include. */
export interface KeptSteps {
  readonly parameters: GPUBuffer;
  readonly steps: number;
  readonly samples: number;
  readonly stopped: TrainResult['stopped'];
}

/**
 * Submission bookkeeping of a `train` call that `config.signal` or `config.stopAtUnixMs` may cut
 * short, giving it the CPU engine's meaning: training stops after the first mini-batch that ends
 * (on the GPU) once the stop condition holds. The host still runs up to `snapshots.length` steps
 * ahead of the GPU; each step copies the parameters it produced into its snapshot slot, so when
 * the step seen completing is followed by steps already queued, the result is that step's
 * snapshot and they are discarded. A slot is reused only after its step has been seen complete.
 */
export class StoppableSteps {
  readonly #ctx: GpuContext;
  readonly #params: GPUBuffer;
  readonly #snapshots: readonly GPUBuffer[];
  readonly #byteLength: number;
  readonly #config: TrainConfig;
  readonly #totalSteps: number;
  /** Submitted steps not yet seen complete, oldest first, with the samples counted up to each. */
  readonly #pending: { done: Promise<void>; samples: number }[] = [];
  #submitted = 0;
  #samplesSubmitted = 0;
  #completed = 0;
  #samplesCompleted = 0;
  #stopped: TrainResult['stopped'] = 'complete';

  /**
   * `params` is updated in place by every step; each snapshot holds at least `byteLength` bytes;
   * `totalSteps` is the step count of the full run (no stop check follows the last step).
   */
  constructor(
    ctx: GpuContext,
    params: GPUBuffer,
    snapshots: readonly GPUBuffer[],
    byteLength: number,
    config: TrainConfig,
    totalSteps: number,
  ) {
    this.#ctx = ctx;
    this.#params = params;
    this.#snapshots = snapshots;
    this.#byteLength = byteLength;
    this.#config = config;
    this.#totalSteps = totalSteps;
  }

  /**
   * Whether training must stop instead of submitting another step: checked before the first step;
   * later, once the window is full, after waiting for the oldest submitted step to complete.
   */
  async stopBeforeNext(): Promise<boolean> {
    if (this.#submitted === 0) return this.#check();
    if (this.#pending.length < this.#snapshots.length) return false;
    return this.#observeOldest();
  }

  /** Submits one step's dispatches followed by the copy of its parameters into its snapshot slot. */
  submit(dispatches: readonly Dispatch[], rows: number): void {
    const ctx = this.#ctx;
    const encoder = ctx.device.createCommandEncoder();
    ctx.encode(encoder, dispatches);
    const slot = this.#snapshots[this.#submitted % this.#snapshots.length]!;
    encoder.copyBufferToBuffer(this.#params, 0, slot, 0, this.#byteLength);
    ctx.device.queue.submit([encoder.finish()]);
    const done = ctx.device.queue.onSubmittedWorkDone();
    // Awaited in order later, or abandoned when training stops: a rejection must not go unhandled.
    done.catch(() => {});
    this.#submitted++;
    this.#samplesSubmitted += rows;
    this.#pending.push({ done, samples: this.#samplesSubmitted });
  }

  /** After the loop: waits for the steps still in flight (a stop may cut them) and says what is kept. */
  async finish(): Promise<KeptSteps> {
    while (this.#stopped === 'complete' && this.#pending.length > 0) {
      if (await this.#observeOldest()) break;
    }
    const parameters =
      this.#completed === 0 ? this.#params : this.#snapshots[(this.#completed - 1) % this.#snapshots.length]!;
    return {
      parameters,
      steps: this.#completed,
      samples: this.#samplesCompleted,
      stopped: this.#stopped,
    };
  }

  /** Waits for the oldest step in flight; true when training must stop right after it. */
  async #observeOldest(): Promise<boolean> {
    const { done, samples } = this.#pending.shift()!;
    await done;
    this.#ctx.assertAlive();
    this.#completed++;
    this.#samplesCompleted = samples;
    return this.#completed < this.#totalSteps && this.#check();
  }

  #check(): boolean {
    const reason = trainStopReason(this.#config);
    if (reason === null) return false;
    this.#stopped = reason;
    return true;
  }
}
