import { Worker } from 'node:worker_threads';
import type { ModelSpec } from '../../federation/index.ts';
import type { Dataset, EvalResult, TrainConfig, TrainResult } from '../../gpu/index.ts';
import { CohortError, InvalidArgumentError } from '../errors/index.ts';
import { moduleUrl } from '../files/index.ts';

/** A training worker failed or crashed (`SIMULATION_WORKER`). */
export class SimulationWorkerError extends CohortError {}

/** What every worker holds: the model, the training rows with each site's row indices, the test rows. */
export interface TrainPoolData {
  readonly spec: ModelSpec;
  readonly train: SharedDataset;
  readonly test: SharedDataset;
  readonly parts: readonly ArrayLike<number>[];
}

/** A data set whose arrays live in shared memory (copied once, read by every worker). */
export interface SharedDataset {
  readonly features: Float32Array;
  readonly labels: Uint8Array;
  readonly count: number;
  readonly featureCount: number;
  readonly classCount: number;
}

/** A message to a worker. */
export type PoolRequest =
  | {
      readonly id: number;
      readonly kind: 'train';
      readonly site: number;
      readonly global: Float32Array;
      readonly config: Omit<TrainConfig, 'signal' | 'stopAtUnixMs'>;
    }
  | {
      readonly id: number;
      readonly kind: 'evaluate';
      readonly global: Float32Array;
      readonly start: number;
      readonly end: number;
    };

/** A worker's answer. */
export type PoolResponse =
  | { readonly id: number; readonly train: TrainResult }
  | { readonly id: number; readonly evaluate: EvalResult }
  | { readonly id: number; readonly error: string };

/**
 * Local training of a simulation's sites on several CPU-engine worker threads: each worker holds
 * the rows (shared memory) and trains the sites it is handed, so C·K sites of a round train in
 * parallel. Each site's training is the CPU engine's, deterministic in its inputs, so the results
 * are those of training the sites one after another; evaluation splits the test rows and adds the
 * counts.
 */
export class TrainPool {
  readonly #workers: Worker[] = [];
  readonly #idle: Worker[] = [];
  readonly #queue: { request: PoolRequest; resolve: (r: PoolResponse) => void }[] = [];
  readonly #pending = new Map<number, (r: PoolResponse) => void>();
  readonly #testCount: number;
  readonly #classes: number;
  #next = 1;
  #failure: Error | undefined;

  /** Starts `workers` threads (an integer in [2, 64]) over `data`. */
  constructor(
    workers: number,
    spec: ModelSpec,
    train: Dataset,
    test: Dataset,
    parts: readonly ArrayLike<number>[],
  ) {
    if (!Number.isInteger(workers) || workers < 2 || workers > 64) {
      throw new InvalidArgumentError(`training.workers ${workers} must be an integer in [2, 64]`);
    }
    const data: TrainPoolData = { spec, train: shared(train), test: shared(test), parts };
    this.#testCount = test.count;
    this.#classes = test.classCount;
    for (let i = 0; i < workers; i++) {
      const worker = new Worker(moduleUrl('./train-worker.ts', import.meta.url), { workerData: data });
      worker.on('message', (r: PoolResponse) => this.#done(worker, r));
      worker.on('error', (err) => this.#fail(err));
      worker.on('exit', (code) => {
        if (code !== 0) this.#fail(new Error(`train worker exited with code ${code}`));
      });
      this.#workers.push(worker);
      this.#idle.push(worker);
    }
  }

  /** Trains `site` from `global` (copied; the worker's result is a fresh array). */
  async train(
    site: number,
    global: Float32Array,
    config: Omit<TrainConfig, 'signal' | 'stopAtUnixMs'>,
  ): Promise<TrainResult> {
    const r = await this.#run({ id: this.#next++, kind: 'train', site, global, config });
    if ('train' in r) return r.train;
    throw new SimulationWorkerError('SIMULATION_WORKER', 'error' in r ? r.error : 'unexpected answer');
  }

  /** Loss, accuracy and confusion of `global` on the test rows, split across the workers. */
  async evaluate(global: Float32Array): Promise<EvalResult> {
    const n = this.#workers.length;
    const size = Math.ceil(this.#testCount / n);
    const parts = await Promise.all(
      Array.from({ length: n }, (_, k) => [k * size, Math.min(this.#testCount, (k + 1) * size)] as const)
        .filter(([s, e]) => e > s)
        .map(([start, end]) => this.#run({ id: this.#next++, kind: 'evaluate', global, start, end })),
    );
    const confusion = new Uint32Array(this.#classes * this.#classes);
    let lossSum = 0;
    let count = 0;
    for (const r of parts) {
      if (!('evaluate' in r))
        throw new SimulationWorkerError('SIMULATION_WORKER', 'error' in r ? r.error : 'unexpected answer');
      lossSum += r.evaluate.loss * r.evaluate.count;
      count += r.evaluate.count;
      r.evaluate.confusion?.forEach((v, i) => {
        confusion[i]! += v;
      });
    }
    let correct = 0;
    for (let c = 0; c < this.#classes; c++) correct += confusion[c * this.#classes + c]!;
    return { loss: lossSum / count, accuracy: correct / count, count, confusion };
  }

  /** Stops every worker. */
  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }

  #run(request: PoolRequest): Promise<PoolResponse> {
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve) => {
      this.#queue.push({ request, resolve });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#idle.length > 0 && this.#queue.length > 0) {
      const worker = this.#idle.pop()!;
      const { request, resolve } = this.#queue.shift()!;
      this.#pending.set(request.id, resolve);
      worker.postMessage(request);
    }
  }

  #done(worker: Worker, r: PoolResponse): void {
    const resolve = this.#pending.get(r.id);
    this.#pending.delete(r.id);
    this.#idle.push(worker);
    resolve?.(r);
    this.#pump();
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    for (const [id, resolve] of this.#pending) resolve({ id, error: err.message });
    this.#pending.clear();
    for (const { request, resolve } of this.#queue.splice(0)) resolve({ id: request.id, error: err.message });
  }
}

function shared(d: Dataset): SharedDataset {
  const features = new Float32Array(new SharedArrayBuffer(d.features.byteLength));
  features.set(d.features);
  const labels = new Uint8Array(new SharedArrayBuffer(d.labels.byteLength));
  labels.set(d.labels);
  return { features, labels, count: d.count, featureCount: d.featureCount, classCount: d.classCount };
}
