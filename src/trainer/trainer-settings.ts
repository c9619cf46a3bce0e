import { assertInteger, InvalidArgumentError } from '../errors/index.ts';

/**
 * Largest feature count per row the agent accepts, from `describe` and in a standardization
 * (2^24: far above any real row, e.g. a 3 × 2048 × 2048 image, and small enough to be a sane array).
 */
export const MAX_TRAINER_FEATURES = 2 ** 24;

/**
 * The federation's standardization, which the trainer applies itself: every feature j of every row
 * it trains or evaluates on becomes (x_j − mean[j]) / std[j]. It comes from the federated
 * statistics (`standardizerFromTotals`), so every site standardizes alike.
 */
export interface Standardization {
  /** Per-feature means (finite), one per feature of a row. */
  readonly mean: readonly number[];
  /** Per-feature population deviations (finite, > 0), as many as `mean`. */
  readonly std: readonly number[];
}

/** Round settings the agent passes to `train`, as they appear under `settings` in request.json. */
export interface TrainSettings {
  /** The round being trained (integer ≥ 0); for logs and per-round seeding. */
  readonly round: number;
  /** SGD step size (finite, > 0). */
  readonly learningRate: number;
  /** Examples per optimizer step (integer ≥ 1); the last batch of an epoch may be smaller. */
  readonly batchSize: number;
  /** Passes over the site's training rows (integer ≥ 1). */
  readonly epochs: number;
  /** FedProx μ (finite, ≥ 0): adds μ/2·‖w − w₀‖² to the loss, w₀ the global model; 0 is plain FedAvg. */
  readonly proximalMu: number;
  /** Seed of the shuffling (integer in [0, 2^53 − 1]); the same seed, data and model give the same result. */
  readonly shuffleSeed: number;
  /**
   * Wall-clock time (Unix ms, integer ≥ 0) by which the update must reach the aggregator. Advisory:
   * a trainer may stop early to meet it; the agent itself only enforces `timeoutMs` and its signal.
   */
  readonly deadlineUnixMs: number;
  /**
   * When present, the trainer standardizes every feature of its training rows with it before
   * training (see {@link Standardization}); absent, it trains on its rows as they are.
   */
  readonly standardization?: Standardization;
}

/**
 * `settings` checked field by field and copied (only the fields above, so nothing else reaches
 * request.json). `features`, when known (from `describe`), is the length `settings.standardization`
 * must have.
 *
 * @throws InvalidArgumentError naming the field (`settings.batchSize must be an integer in …`).
 */
export function checkedTrainSettings(settings: TrainSettings, features?: number): TrainSettings {
  if (settings === null || typeof settings !== 'object') {
    throw new InvalidArgumentError('settings must be an object', { details: { name: 'settings' } });
  }
  const { round, learningRate, batchSize, epochs, proximalMu, shuffleSeed, deadlineUnixMs } = settings;
  assertInteger('settings.round', round, 0, Number.MAX_SAFE_INTEGER);
  assertPositiveFinite('settings.learningRate', learningRate);
  assertInteger('settings.batchSize', batchSize, 1, 2 ** 31 - 1);
  assertInteger('settings.epochs', epochs, 1, 1_000_000);
  if (typeof proximalMu !== 'number' || !Number.isFinite(proximalMu) || proximalMu < 0) {
    throw new InvalidArgumentError(
      `settings.proximalMu must be a finite number ≥ 0, got ${String(proximalMu)}`,
      {
        details: { name: 'settings.proximalMu', value: String(proximalMu) },
      },
    );
  }
  assertInteger('settings.shuffleSeed', shuffleSeed, 0, Number.MAX_SAFE_INTEGER);
  assertInteger('settings.deadlineUnixMs', deadlineUnixMs, 0, Number.MAX_SAFE_INTEGER);
  const checked = { round, learningRate, batchSize, epochs, proximalMu, shuffleSeed, deadlineUnixMs };
  if (settings.standardization === undefined) return checked;
  const standardization = checkedStandardization(
    'settings.standardization',
    settings.standardization,
    features,
  );
  return { ...checked, standardization };
}

/**
 * `value` checked as a {@link Standardization} named `name` and copied into plain arrays: `mean`
 * and `std` arrays of the same length in [1, {@link MAX_TRAINER_FEATURES}], equal to `features`
 * when that is known, every mean finite, every deviation finite and > 0.
 *
 * @throws InvalidArgumentError naming the field and, for a value, its index (`settings.standardization.std[2]`).
 */
export function checkedStandardization(
  name: string,
  value: Standardization,
  features: number | undefined,
): Standardization {
  if (value === null || typeof value !== 'object') {
    throw new InvalidArgumentError(`${name} must be an object { mean, std }`, { details: { name } });
  }
  const mean = numbers(`${name}.mean`, value.mean, false);
  const std = numbers(`${name}.std`, value.std, true);
  if (std.length !== mean.length) {
    throw new InvalidArgumentError(
      `${name}.std has ${std.length} values, ${name}.mean has ${mean.length}; they must be as many`,
      { details: { name: `${name}.std`, length: std.length, expected: mean.length } },
    );
  }
  if (features !== undefined && mean.length !== features) {
    throw new InvalidArgumentError(
      `${name}.mean has ${mean.length} values, but the trainer's rows have ${features} features`,
      { details: { name: `${name}.mean`, length: mean.length, expected: features } },
    );
  }
  return { mean, std };
}

/** A fresh copy of `value`: an array of finite numbers (> 0 when `positive`), 1 to MAX_TRAINER_FEATURES long. */
function numbers(name: string, value: unknown, positive: boolean): number[] {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_TRAINER_FEATURES) {
    const what = Array.isArray(value)
      ? `an array of ${value.length}`
      : value === null
        ? 'null'
        : typeof value;
    throw new InvalidArgumentError(
      `${name} is ${what}, must be an array of 1 to ${MAX_TRAINER_FEATURES} numbers`,
      { details: { name } },
    );
  }
  const out: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i]; // a loop, not map: a hole in a sparse array is checked too
    if (typeof v !== 'number' || !Number.isFinite(v) || (positive && v <= 0)) {
      const must = positive ? 'a finite number > 0' : 'a finite number';
      throw new InvalidArgumentError(`${name}[${i}] must be ${must}, got ${String(v)}`, {
        details: { name: `${name}[${i}]`, value: String(v) },
      });
    }
    out.push(v);
  }
  return out;
}

function assertPositiveFinite(name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new InvalidArgumentError(`${name} must be a finite number > 0, got ${String(value)}`, {
      details: { name, value: String(value) },
    });
  }
}
