import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSpec } from '../../federation/index.ts';
import { CohortError, InvalidArgumentError } from '../errors/index.ts';
import type { FeatureTotals } from '../protocol/index.ts';
import {
  decodeSafetensors,
  encodeSafetensors,
  modelTensors,
  parametersFromTensors,
} from '../versions/index.ts';
import { CallFolders } from './call-folders.ts';
import { readResultFile } from './result-file.ts';
import { trainerEnv } from './trainer-env.ts';
import { TrainerError } from './trainer-error.ts';
import {
  type CheckedOptions,
  checkedOptions,
  type ExternalTrainerOptions,
  MAX_RESULT_HEADER_BYTES,
} from './trainer-options.ts';
import { runTrainerProcess } from './trainer-process.ts';
import {
  TRAINER_FILES,
  TRAINER_PROTOCOL,
  type TrainerAction,
  type TrainerRequest,
} from './trainer-protocol.ts';
import {
  type EvaluationResult,
  parseDescription,
  parseEvaluation,
  parseResultJson,
  parseStatistics,
  parseTrainReport,
  type TrainerDescription,
  type TrainReport,
} from './trainer-result.ts';
import {
  checkedStandardization,
  checkedTrainSettings,
  type Standardization,
  type TrainSettings,
} from './trainer-settings.ts';

/** What `train` returns: the trained model and the numbers of result.json. */
export interface TrainResult extends TrainReport {
  /** The trained parameters in Cohort's flat layout of the spec; a fresh array, every value finite. */
  readonly parameters: Float32Array;
}

/**
 * A site's own training code, run as an external process per call. Calls run one at a time, in
 * the order made; a call waiting its turn can be aborted by its signal.
 */
export interface ExternalTrainer {
  /** The absolute path of `workDir`. */
  readonly workDir: string;
  /** The last successful `describe`, or undefined before the first. */
  readonly description: TrainerDescription | undefined;
  /**
   * Asks the trainer about the site's data: the training example count (the site's FedAvg weight,
   * announced before rounds), the validation rows, and optionally the classes and the features per
   * row. Later `statistics`, `train` and `evaluate` results must report the same counts.
   */
  describe(signal?: AbortSignal): Promise<TrainerDescription>;
  /**
   * The exact fixed-point sums of the trainer's training rows (after its own preprocessing, before
   * any standardization), for a statistics round of federated standardization: `rows`, and per
   * feature Σq⁺, Σ(−q)⁻ and Σq² of q = round(x · 2^12) (`featureTotals` of the same rows). Runs
   * `describe` first when it has not run. `rows` must equal describe's `examples`; each array
   * has describe's `features` entries; the sums must be those of some rows (no negative variance).
   *
   * @throws TrainerError `TRAINER_NO_FEATURES` when describe reported no `features` (no process
   *   is started for statistics), `TRAINER_RESULT_INVALID` naming the field,
   *   `TRAINER_EXAMPLES_CHANGED` for another `rows`, and anything a call can fail with.
   */
  statistics(signal?: AbortSignal): Promise<FeatureTotals>;
  /**
   * Trains `spec` from `initial` (the global model, flat layout) on the site's rows with
   * `settings`; with `settings.standardization` the trainer standardizes its rows with it first.
   * Runs `describe` first when it has not run. The trained weights are checked tensor by tensor
   * (names, shapes, F32, every value finite) and `examples` against `describe`.
   *
   * @throws InvalidArgumentError for a bad spec, `initial` (length, non-finite) or setting (a
   *   standardization: a non-finite value, a deviation ≤ 0, lengths unequal or other than
   *   describe's `features`), before any process starts.
   * @throws TrainerError for anything that goes wrong with the trainer or its results.
   */
  train(
    spec: ModelSpec,
    initial: Float32Array,
    settings: TrainSettings,
    signal?: AbortSignal,
  ): Promise<TrainResult>;
  /**
   * Evaluates `parameters` of `spec` on the trainer's own validation rows, standardized with
   * `standardization` first when given (the one training used). Runs `describe` first when it has
   * not run; refuses (`TRAINER_NO_VALIDATION`) when it reported no validation rows.
   *
   * @throws InvalidArgumentError for a bad spec, `parameters` or `standardization` (as for `train`),
   *   before any process starts.
   * @throws TrainerError for anything that goes wrong with the trainer or its results.
   */
  evaluate(
    spec: ModelSpec,
    parameters: Float32Array,
    signal?: AbortSignal,
    standardization?: Standardization,
  ): Promise<EvaluationResult>;
}

/**
 * An {@link ExternalTrainer} running `options.command`. Checks the options and prepares `workDir`
 * (mode 0700) now; starts nothing until the first call.
 *
 * @throws InvalidArgumentError naming the option; TrainerError `TRAINER_WORKDIR`.
 */
export function createExternalTrainer(options: ExternalTrainerOptions): ExternalTrainer {
  return new ProcessTrainer(checkedOptions(options));
}

/** The model's output width: the first dimension of its last tensor (the last dense layer's bias). */
function outputClasses(spec: ModelSpec, parameters: Float32Array): number {
  const tensors = modelTensors(spec, parameters);
  const last = tensors[tensors.length - 1];
  const classes = last?.shape[0];
  if (classes === undefined || !Number.isSafeInteger(classes) || classes < 1) {
    throw new InvalidArgumentError(`model ${spec.name} has no output layer with parameters`, {
      details: { name: 'spec' },
    });
  }
  return classes;
}

/** Resolves when `previous` settles; rejects `TRAINER_ABORTED` if `signal` aborts first. */
function waitTurn(previous: Promise<void>, signal: AbortSignal | undefined, label: string): Promise<void> {
  const aborted = (): TrainerError =>
    new TrainerError('TRAINER_ABORTED', `trainer ${label} aborted while waiting for the previous call`, {
      cause: signal?.reason,
    });
  if (signal === undefined) return previous;
  if (signal.aborted) return Promise.reject(aborted());
  return new Promise((resolvePromise, reject) => {
    const onAbort = (): void => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
    void previous.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolvePromise();
    });
  });
}

class ProcessTrainer implements ExternalTrainer {
  readonly #options: CheckedOptions;
  readonly #folders: CallFolders;
  #description: TrainerDescription | undefined;
  #queue: Promise<void> = Promise.resolve();

  constructor(options: CheckedOptions) {
    this.#options = options;
    this.#folders = new CallFolders(options.workDir, options.keepFailedCalls);
  }

  get workDir(): string {
    return this.#options.workDir;
  }

  get description(): TrainerDescription | undefined {
    return this.#description;
  }

  describe(signal?: AbortSignal): Promise<TrainerDescription> {
    return this.#exclusive(signal, 'describe', () => this.#describe(signal));
  }

  statistics(signal?: AbortSignal): Promise<FeatureTotals> {
    return this.#exclusive(signal, 'statistics', async () => {
      const described = this.#description ?? (await this.#describe(signal));
      const { features } = described;
      if (features === undefined) {
        throw new TrainerError(
          'TRAINER_NO_FEATURES',
          "the trainer's describe reported no features (the feature count per row), so its statistics cannot be checked; report features in describe",
          { details: { action: 'statistics' } },
        );
      }
      const request: TrainerRequest = {
        protocol: TRAINER_PROTOCOL,
        action: 'statistics',
        result: TRAINER_FILES.result,
      };
      return this.#call('statistics', 'statistics', request, undefined, signal, async (dir, details) =>
        parseStatistics(await this.#resultJson(dir, details), described.examples, features, details),
      );
    });
  }

  async train(
    spec: ModelSpec,
    initial: Float32Array,
    settings: TrainSettings,
    signal?: AbortSignal,
  ): Promise<TrainResult> {
    // Arguments are checked before waiting for the previous call, so a bad call fails at once.
    const checked = checkedTrainSettings(settings, this.#description?.features);
    const input = encodeSafetensors(
      modelTensors(spec, initial),
      this.#metadata(spec, 'train', checked.round),
    );
    const classes = outputClasses(spec, initial);
    const label = `train (round ${checked.round})`;
    return this.#exclusive(signal, label, async () => {
      const described = this.#description ?? (await this.#describe(signal));
      this.#assertClasses(described, classes, spec);
      this.#assertFeatures(described, 'settings.standardization', checked.standardization);
      const request: TrainerRequest = {
        protocol: TRAINER_PROTOCOL,
        action: 'train',
        model: spec,
        settings: checked,
        input: TRAINER_FILES.input,
        output: TRAINER_FILES.output,
        result: TRAINER_FILES.result,
      };
      return this.#call('train', label, request, input, signal, async (dir, details) => {
        const report = parseTrainReport(await this.#resultJson(dir, details), described.examples, details);
        const parameters = await this.#weights(dir, spec, initial.length, details);
        return { ...report, parameters };
      });
    });
  }

  async evaluate(
    spec: ModelSpec,
    parameters: Float32Array,
    signal?: AbortSignal,
    standardization?: Standardization,
  ): Promise<EvaluationResult> {
    const standardize =
      standardization === undefined
        ? undefined
        : checkedStandardization('standardization', standardization, this.#description?.features);
    const input = encodeSafetensors(
      modelTensors(spec, parameters),
      this.#metadata(spec, 'evaluate', undefined),
    );
    const classes = outputClasses(spec, parameters);
    return this.#exclusive(signal, 'evaluate', async () => {
      const described = this.#description ?? (await this.#describe(signal));
      this.#assertClasses(described, classes, spec);
      this.#assertFeatures(described, 'standardization', standardize);
      if (described.validationExamples === 0) {
        throw new TrainerError(
          'TRAINER_NO_VALIDATION',
          'the trainer reported no validation rows (validationExamples 0), so there is nothing to evaluate',
          { details: { action: 'evaluate' } },
        );
      }
      const request: TrainerRequest = {
        protocol: TRAINER_PROTOCOL,
        action: 'evaluate',
        model: spec,
        input: TRAINER_FILES.input,
        result: TRAINER_FILES.result,
        ...(standardize === undefined ? {} : { standardization: standardize }),
      };
      return this.#call('evaluate', 'evaluate', request, input, signal, async (dir, details) =>
        parseEvaluation(await this.#resultJson(dir, details), described.validationExamples, classes, details),
      );
    });
  }

  async #describe(signal: AbortSignal | undefined): Promise<TrainerDescription> {
    const request: TrainerRequest = {
      protocol: TRAINER_PROTOCOL,
      action: 'describe',
      result: TRAINER_FILES.result,
    };
    const description = await this.#call(
      'describe',
      'describe',
      request,
      undefined,
      signal,
      async (dir, details) => parseDescription(await this.#resultJson(dir, details), details),
    );
    this.#description = description;
    return description;
  }

  #assertClasses(described: TrainerDescription, classes: number, spec: ModelSpec): void {
    if (described.classes !== undefined && described.classes > classes) {
      throw new TrainerError(
        'TRAINER_CLASSES_MISMATCH',
        `the trainer's labels range over ${described.classes} classes, but model ${spec.name} outputs ${classes}`,
        { details: { classes: described.classes, outputs: classes } },
      );
    }
  }

  /** A standardization checked before `describe` ran is checked again against its `features`. */
  #assertFeatures(
    described: TrainerDescription,
    name: string,
    standardization: Standardization | undefined,
  ): void {
    if (standardization !== undefined) checkedStandardization(name, standardization, described.features);
  }

  #metadata(spec: ModelSpec, action: TrainerAction, round: number | undefined): Record<string, string> {
    return {
      format: 'pt',
      cohort_protocol: TRAINER_PROTOCOL,
      cohort_action: action,
      cohort_model: String(spec.name),
      cohort_spec: JSON.stringify(spec),
      ...(round === undefined ? {} : { cohort_round: String(round) }),
    };
  }

  /** Runs `fn` after every earlier call has settled. */
  async #exclusive<T>(signal: AbortSignal | undefined, label: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#queue;
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    this.#queue = Promise.all([previous, mine]).then(() => undefined);
    try {
      await waitTurn(previous, signal, label);
      return await fn();
    } finally {
      release();
    }
  }

  /** One process run in a fresh folder: request (and model) in, `read` the results out. */
  async #call<T>(
    action: TrainerAction,
    label: string,
    request: TrainerRequest,
    input: Uint8Array | undefined,
    signal: AbortSignal | undefined,
    read: (dir: string, details: Readonly<Record<string, unknown>>) => Promise<T>,
  ): Promise<T> {
    const dir = await this.#folders.create(action);
    const details = Object.freeze({ action, callDir: dir });
    try {
      if (input !== undefined)
        await writeFile(join(dir, TRAINER_FILES.input), input, { mode: 0o600, flag: 'wx' });
      const requestPath = join(dir, TRAINER_FILES.request);
      await writeFile(requestPath, `${JSON.stringify(request, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
      const o = this.#options;
      await runTrainerProcess({
        argv: [...o.command, requestPath],
        env: trainerEnv(process.env, o.env),
        cwd: o.cwd,
        timeoutMs: o.timeoutMs,
        killGraceMs: o.killGraceMs,
        signal,
        label,
        details,
      });
      const result = await read(dir, details);
      await this.#folders.succeeded(dir);
      return result;
    } catch (error) {
      await this.#folders.failed(dir);
      if (error instanceof CohortError) throw error;
      throw new TrainerError('TRAINER_WORKDIR', `trainer ${label}: ${(error as Error).message}`, {
        cause: error,
        details,
      });
    }
  }

  async #resultJson(
    dir: string,
    details: Readonly<Record<string, unknown>>,
  ): Promise<Record<string, unknown>> {
    const bytes = await readResultFile(
      dir,
      TRAINER_FILES.result,
      this.#options.maxResultJsonBytes,
      'the trainer exited 0 without writing it',
      details,
    );
    return parseResultJson(bytes, details);
  }

  async #weights(
    dir: string,
    spec: ModelSpec,
    count: number,
    details: Readonly<Record<string, unknown>>,
  ): Promise<Float32Array> {
    const file = TRAINER_FILES.output;
    const bytes = await readResultFile(
      dir,
      file,
      8 + MAX_RESULT_HEADER_BYTES + 4 * count,
      'the trainer exited 0 without writing the trained weights',
      details,
    );
    let parameters: Float32Array;
    try {
      const { tensors } = decodeSafetensors(bytes, { maxHeaderBytes: MAX_RESULT_HEADER_BYTES });
      parameters = parametersFromTensors(spec, tensors);
    } catch (cause) {
      if (!(cause instanceof CohortError)) throw cause;
      throw new TrainerError('TRAINER_WEIGHTS_INVALID', `${file}: ${cause.message}`, {
        cause,
        details: { ...details, file, reason: cause.code },
      });
    }
    if (parameters.length !== count) {
      throw new TrainerError(
        'TRAINER_WEIGHTS_INVALID',
        `${file}: ${parameters.length} values, model expects ${count}`,
        {
          details: { ...details, file },
        },
      );
    }
    for (let i = 0; i < parameters.length; i++) {
      const v = parameters[i]!;
      if (v - v !== 0) {
        throw new TrainerError(
          'TRAINER_WEIGHTS_INVALID',
          `${file}: parameter ${i} is ${v}; every weight must be finite`,
          {
            details: { ...details, file, index: i },
          },
        );
      }
    }
    return parameters;
  }
}
