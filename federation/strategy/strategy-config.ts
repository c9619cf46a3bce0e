import { InvalidArgumentError } from '../../src/errors/index.ts';

/** The server update rules Cohort implements. */
export type StrategyName = 'fedavg' | 'fedprox' | 'fedadam' | 'fedyogi';

/** Every {@link StrategyName}, in the order of their wire ids (0, 1, 2, 3; see `encodeStrategyState`). */
export const STRATEGY_NAMES: readonly StrategyName[] = Object.freeze([
  'fedavg',
  'fedprox',
  'fedadam',
  'fedyogi',
]);

/**
 * FedAvg (McMahan et al., 2017) with a server learning rate: w ← w + η·Δ̄.
 * η = 1 (the default) makes the new model the weighted mean of the client models.
 */
export interface FedAvgConfig {
  readonly name: 'fedavg';
  /** η, dimensionless, finite and > 0; default 1. */
  readonly serverLearningRate?: number;
}

/**
 * FedProx (Li et al., 2020): clients add (μ/2)·‖w_k − w‖² to their local loss; the server step is
 * FedAvg's, w ← w + η·Δ̄.
 */
export interface FedProxConfig {
  readonly name: 'fedprox';
  /** μ, the client-side proximal coefficient handed to local training; finite and ≥ 0; default 0.01. */
  readonly mu?: number;
  /** η, finite and > 0; default 1. */
  readonly serverLearningRate?: number;
}

/**
 * Hyperparameters of the adaptive rules of Reddi et al., "Adaptive Federated Optimization"
 * (ICLR 2021), Algorithm 2 (see `createStrategy` for the formulas).
 */
export interface AdaptiveConfigFields {
  /** η, the server learning rate; finite and > 0; default 0.01. */
  readonly serverLearningRate?: number;
  /** β1, first-moment decay; in [0, 1); default 0.9. */
  readonly beta1?: number;
  /** β2, second-moment decay; in [0, 1); default 0.99. */
  readonly beta2?: number;
  /** τ, the adaptivity (ε-like) constant, in parameter units; finite and > 0; default 1e-3. */
  readonly tau?: number;
}

/** FedAdam: Adam's second moment on the server. */
export interface FedAdamConfig extends AdaptiveConfigFields {
  readonly name: 'fedadam';
}

/** FedYogi: Yogi's additive, sign-controlled second moment on the server. */
export interface FedYogiConfig extends AdaptiveConfigFields {
  readonly name: 'fedyogi';
}

/** A server strategy's configuration; omitted fields take the documented defaults. */
export type StrategyConfig = FedAvgConfig | FedProxConfig | FedAdamConfig | FedYogiConfig;

/**
 * A configuration with every field present and validated. Fields a rule does not use hold their
 * neutral values (mu = 0 except for FedProx; beta1, beta2, tau = 0 for FedAvg and FedProx), so it
 * can be written into a commit's strategy parameters as one fixed shape.
 */
export interface ResolvedStrategyConfig {
  readonly name: StrategyName;
  readonly serverLearningRate: number;
  readonly mu: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly tau: number;
}

/** Defaults per rule (Reddi et al. 2021 use η ∈ [1e-3, 1], β1 = 0.9, β2 = 0.99, τ = 1e-3). */
export const STRATEGY_DEFAULTS = Object.freeze({
  fedavg: Object.freeze({ serverLearningRate: 1 }),
  fedprox: Object.freeze({ serverLearningRate: 1, mu: 0.01 }),
  adaptive: Object.freeze({ serverLearningRate: 0.01, beta1: 0.9, beta2: 0.99, tau: 1e-3 }),
});

const FIELDS: Readonly<Record<StrategyName, readonly string[]>> = {
  fedavg: ['name', 'serverLearningRate'],
  fedprox: ['name', 'serverLearningRate', 'mu'],
  fedadam: ['name', 'serverLearningRate', 'beta1', 'beta2', 'tau'],
  fedyogi: ['name', 'serverLearningRate', 'beta1', 'beta2', 'tau'],
};

/**
 * Validates `config` and fills in the defaults. Throws `INVALID_ARGUMENT` naming the field:
 * an unknown `config.name`, a field the rule does not use (`config.mu` on FedAdam), or a value out of
 * range (η and τ finite and > 0, β1 and β2 in [0, 1), μ finite and ≥ 0). Fields set to `undefined`
 * count as absent.
 */
export function resolveStrategyConfig(config: StrategyConfig): ResolvedStrategyConfig {
  if (typeof config !== 'object' || config === null) {
    throw new InvalidArgumentError(`config must be a strategy configuration object, got ${String(config)}`);
  }
  const name: unknown = config.name;
  if (typeof name !== 'string' || !(STRATEGY_NAMES as readonly string[]).includes(name)) {
    throw new InvalidArgumentError(
      `config.name is ${JSON.stringify(name)}, must be one of ${STRATEGY_NAMES.join(', ')}`,
      { details: { name: 'config.name', value: String(name) } },
    );
  }
  const strategy = name as StrategyName;
  const allowed = FIELDS[strategy];
  for (const [key, value] of Object.entries(config)) {
    if (value !== undefined && !allowed.includes(key)) {
      throw new InvalidArgumentError(
        `config.${key} does not apply to ${strategy} (allowed: ${allowed.join(', ')})`,
        {
          details: { name: `config.${key}` },
        },
      );
    }
  }
  const fields = config as unknown as Partial<Record<string, unknown>>;
  switch (strategy) {
    case 'fedavg':
      return Object.freeze({
        name: strategy,
        serverLearningRate: positive(
          'config.serverLearningRate',
          fields.serverLearningRate,
          STRATEGY_DEFAULTS.fedavg.serverLearningRate,
        ),
        mu: 0,
        beta1: 0,
        beta2: 0,
        tau: 0,
      });
    case 'fedprox':
      return Object.freeze({
        name: strategy,
        serverLearningRate: positive(
          'config.serverLearningRate',
          fields.serverLearningRate,
          STRATEGY_DEFAULTS.fedprox.serverLearningRate,
        ),
        mu: nonNegative('config.mu', fields.mu, STRATEGY_DEFAULTS.fedprox.mu),
        beta1: 0,
        beta2: 0,
        tau: 0,
      });
    case 'fedadam':
    case 'fedyogi': {
      const d = STRATEGY_DEFAULTS.adaptive;
      return Object.freeze({
        name: strategy,
        serverLearningRate: positive(
          'config.serverLearningRate',
          fields.serverLearningRate,
          d.serverLearningRate,
        ),
        mu: 0,
        beta1: decay('config.beta1', fields.beta1, d.beta1),
        beta2: decay('config.beta2', fields.beta2, d.beta2),
        tau: positive('config.tau', fields.tau, d.tau),
      });
    }
  }
}

function finite(name: string, value: unknown, fallback: number, range: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(`${name} must be a finite number ${range}, got ${String(value)}`, {
      details: { name, value: String(value) },
    });
  }
  return value;
}

function rangeError(name: string, value: number, range: string): InvalidArgumentError {
  return new InvalidArgumentError(`${name} must be ${range}, got ${value}`, {
    details: { name, value: String(value) },
  });
}

function positive(name: string, value: unknown, fallback: number): number {
  const v = finite(name, value, fallback, '> 0');
  if (!(v > 0)) throw rangeError(name, v, '> 0');
  return v;
}

function nonNegative(name: string, value: unknown, fallback: number): number {
  const v = finite(name, value, fallback, '≥ 0');
  if (!(v >= 0)) throw rangeError(name, v, '≥ 0');
  return v === 0 ? 0 : v; // −0 → 0, so the resolved config serializes one way
}

function decay(name: string, value: unknown, fallback: number): number {
  const v = finite(name, value, fallback, 'in [0, 1)');
  if (!(v >= 0 && v < 1)) throw rangeError(name, v, 'in [0, 1)');
  return v === 0 ? 0 : v;
}
