import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import type { TrainConfig } from '../engine/index.ts';

/** Throws `INVALID_ARGUMENT` unless `value` is a finite number in the range; `name` is in the message. */
export function assertFiniteInRange(
  name: string,
  value: unknown,
  min: number,
  max: number,
  range: string,
  minExclusive = false,
  maxExclusive = false,
): asserts value is number {
  const ok =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (minExclusive ? value > min : value >= min) &&
    (maxExclusive ? value < max : value <= max);
  if (!ok) {
    throw new InvalidArgumentError(`${name} must be a finite number in ${range}, got ${String(value)}`, {
      details: { name, value: String(value) },
    });
  }
}

/** Throws `INVALID_ARGUMENT` unless η is finite and > 0. */
export function assertLearningRate(name: string, value: unknown): asserts value is number {
  assertFiniteInRange(name, value, 0, Number.POSITIVE_INFINITY, '(0, ∞)', true);
}

/** Throws `INVALID_ARGUMENT` unless β ∈ [0, 1). */
export function assertMomentum(name: string, value: unknown): asserts value is number {
  assertFiniteInRange(name, value, 0, 1, '[0, 1)', false, true);
}

/** Throws `INVALID_ARGUMENT` unless μ is finite and ≥ 0. */
export function assertProximalMu(name: string, value: unknown): asserts value is number {
  assertFiniteInRange(name, value, 0, Number.POSITIVE_INFINITY, '[0, ∞)');
}

/** Throws `INVALID_ARGUMENT` unless `value` is a finite number (a `Date.now()`-scale time in ms). */
export function assertUnixMs(name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(
      `${name} must be a finite number of milliseconds since the Unix epoch, got ${String(value)}`,
      { details: { name, value: String(value) } },
    );
  }
}

/** Throws `INVALID_ARGUMENT` unless `value` is an `AbortSignal`. */
export function assertAbortSignal(name: string, value: unknown): asserts value is AbortSignal {
  if (!(value instanceof AbortSignal)) {
    const got =
      typeof value === 'object' && value !== null ? (value.constructor?.name ?? 'object') : String(value);
    throw new InvalidArgumentError(`${name} must be an AbortSignal, got ${got}`, {
      details: { name, value: got },
    });
  }
}

/**
 * Throws `INVALID_ARGUMENT` naming the bad field of a {@link TrainConfig} ("config.momentum must be
 * a finite number in [0, 1), got 1"): learningRate > 0, momentum ∈ [0, 1), integer batchSize ≥ 1,
 * integer epochs ≥ 1, proximalMu ≥ 0 (all finite), shuffleSeed a uint32; when present (not
 * undefined), signal an `AbortSignal` and stopAtUnixMs a finite number.
 */
export function assertTrainConfig(config: TrainConfig, name = 'config'): void {
  if (typeof config !== 'object' || config === null) {
    throw new InvalidArgumentError(`${name} must be a TrainConfig object, got ${String(config)}`);
  }
  assertLearningRate(`${name}.learningRate`, config.learningRate);
  assertMomentum(`${name}.momentum`, config.momentum);
  assertInteger(`${name}.batchSize`, config.batchSize, 1, 2 ** 31 - 1);
  assertInteger(`${name}.epochs`, config.epochs, 1, 2 ** 31 - 1);
  assertProximalMu(`${name}.proximalMu`, config.proximalMu);
  assertInteger(`${name}.shuffleSeed`, config.shuffleSeed, 0, 0xffff_ffff);
  if (config.signal !== undefined) assertAbortSignal(`${name}.signal`, config.signal);
  if (config.stopAtUnixMs !== undefined) assertUnixMs(`${name}.stopAtUnixMs`, config.stopAtUnixMs);
}
