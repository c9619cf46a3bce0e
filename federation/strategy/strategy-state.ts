import {
  assertFiniteArray,
  assertInteger,
  assertLength,
  InvalidArgumentError,
} from '../../src/errors/index.ts';
import { STRATEGY_NAMES, type StrategyName } from './strategy-config.ts';

/**
 * What a server rule carries from one round to the next. A plain object of numbers and
 * Float32Arrays, stored with the model version and hashed through `encodeStrategyState`.
 *
 * Invariants: `step` is an integer in [0, 2^53 − 1]; for FedAdam and FedYogi `m` and `v` have the
 * model's parameter count, every entry finite and every `v` entry ≥ 0; for FedAvg and FedProx (which
 * keep no moments) `m` and `v` are empty.
 */
export interface StrategyState {
  /** The rule that produced this state; a state is never handed to another rule. */
  readonly strategy: StrategyName;
  /** t: the number of server updates applied so far (0 before the first). */
  readonly step: number;
  /** First moment m_t (units of Δ̄: parameter units per round); empty for stateless rules. */
  readonly m: Float32Array;
  /** Second moment v_t (squared parameter units); empty for stateless rules. */
  readonly v: Float32Array;
}

/** True for the rules that keep moments (FedAdam, FedYogi). */
export function keepsMoments(strategy: StrategyName): boolean {
  return strategy === 'fedadam' || strategy === 'fedyogi';
}

/**
 * Throws `INVALID_ARGUMENT` (or `UPDATE_NON_FINITE` for a NaN/±Infinity moment, index named) unless
 * `state` satisfies the {@link StrategyState} invariants for `strategy` and `parameterCount`
 * parameters. `name` prefixes the messages ("state.m length 10, parameters length 12").
 */
export function assertStrategyState(
  state: StrategyState,
  strategy: StrategyName,
  parameterCount: number,
  name = 'state',
): void {
  if (typeof state !== 'object' || state === null) {
    throw new InvalidArgumentError(`${name} must be a strategy state object or null, got ${String(state)}`);
  }
  if (!(STRATEGY_NAMES as readonly unknown[]).includes(state.strategy) || state.strategy !== strategy) {
    throw new InvalidArgumentError(
      `${name}.strategy is ${String(state.strategy)}, this strategy is ${strategy}`,
      {
        details: { name: `${name}.strategy`, actual: String(state.strategy), expected: strategy },
      },
    );
  }
  assertInteger(`${name}.step`, state.step, 0, Number.MAX_SAFE_INTEGER);
  const moments = keepsMoments(strategy) ? parameterCount : 0;
  for (const key of ['m', 'v'] as const) {
    const values = state[key];
    if (!(values instanceof Float32Array)) {
      throw new InvalidArgumentError(`${name}.${key} must be a Float32Array`, {
        details: { name: `${name}.${key}` },
      });
    }
    assertLength(
      `${name}.${key}`,
      values.length,
      moments,
      moments === 0 ? `${strategy} keeps` : 'parameters length',
    );
    assertFiniteArray(`${name}.${key}`, values);
  }
  const v = state.v;
  for (let i = 0; i < v.length; i++) {
    if (!(v[i]! >= 0)) {
      throw new InvalidArgumentError(`${name}.v[${i}] is ${v[i]}; the second moment must be ≥ 0`, {
        details: { name: `${name}.v`, index: i, value: String(v[i]) },
      });
    }
  }
}
