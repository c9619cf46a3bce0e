import {
  assertFiniteArray,
  assertLength,
  InvalidArgumentError,
  UpdateError,
} from '../../src/errors/index.ts';
import {
  type ResolvedStrategyConfig,
  resolveStrategyConfig,
  type StrategyConfig,
  type StrategyName,
} from './strategy-config.ts';
import { assertStrategyState, keepsMoments, type StrategyState } from './strategy-state.ts';

/** What {@link ServerStrategy.apply} returns: fresh arrays, never views of the inputs. */
export interface StrategyResult {
  /** w_{t+1}. */
  readonly parameters: Float32Array;
  /** The state after this update (step t + 1). */
  readonly state: StrategyState;
}

/**
 * A server update rule. `apply` is pure: it reads `parameters`, `meanDelta` and `state`, never
 * modifies them, and returns new arrays; the same inputs give the same bits on every machine.
 */
export interface ServerStrategy {
  readonly name: StrategyName;
  /** The validated configuration with defaults filled in (record it with the commit). */
  readonly config: ResolvedStrategyConfig;
  /** μ for the clients' proximal term (μ/2)·‖w_k − w‖²; 0 unless the rule is FedProx. */
  readonly clientProximalMu: number;
  /** The state before the first update: step 0, m_0 = 0, v_0 = f32(τ²) (empty moments for FedAvg/FedProx). */
  initialState(parameterCount: number): StrategyState;
  /**
   * One server update from the current global model w_t (`parameters`) and the round's weighted
   * mean client delta Δ̄ (`meanDelta`, same length). `state` null means {@link initialState}.
   * Throws `INVALID_ARGUMENT` naming a length mismatch ("meanDelta length 10, parameters length 12")
   * or a state that does not belong to this rule, and `UPDATE_NON_FINITE` naming the first
   * non-finite input index or an index whose result overflows float32.
   */
  apply(parameters: Float32Array, meanDelta: Float32Array, state: StrategyState | null): StrategyResult;
}

/**
 * Builds the server rule for `config` (validated by `resolveStrategyConfig`).
 *
 * Formulas, per parameter i, with Δ̄ the weighted mean client delta:
 * - **FedAvg / FedProx**: w_{t+1} = w_t + η·Δ̄. With η = 1 this is the weighted mean of the client
 *   models. FedProx differs only on the clients (`clientProximalMu`).
 * - **FedAdam / FedYogi** (Reddi et al., ICLR 2021, Algorithm 2):
 *   m_t = β1·m_{t−1} + (1 − β1)·Δ̄;
 *   Adam: v_t = β2·v_{t−1} + (1 − β2)·Δ̄²;
 *   Yogi: v_t = v_{t−1} − (1 − β2)·Δ̄²·sign(v_{t−1} − Δ̄²);
 *   w_{t+1} = w_t + η·m_t / (√v_t + τ).
 *   As in the paper's algorithm there is **no bias correction** (no division by 1 − β^t). The
 *   initial moments follow the paper: m_0 = 0 and v_0 = τ² (the paper asks v_{−1} ≥ τ²; we take
 *   equality), stored as f32(τ·τ). Since τ > 0 the denominator √v_t + τ is ≥ τ. Both rules keep
 *   v_t ≥ 0: Adam's is a convex mix of non-negatives, and Yogi subtracts (1 − β2)·Δ̄² ≤ Δ̄² only when
 *   v_{t−1} > Δ̄².
 *   Yogi vs Adam: Yogi's v_t moves by at most (1 − β2)·Δ̄² per round whatever v_{t−1} is, while
 *   Adam's moves by (1 − β2)·(Δ̄² − v_{t−1}). So after large deltas are followed by small ones
 *   (Δ̄² < v_{t−1}/2) Yogi keeps v larger than Adam (smaller, more cautious steps), and when Δ̄²
 *   exceeds v_{t−1} Yogi's v grows more, by (1 − β2)·v_{t−1}.
 *
 * Determinism: every element is computed in float64 from float32 inputs with a fixed operation
 * order, each stored quantity (m_t, v_t, w_{t+1}) rounded once to float32:
 * `m = f32((β1·m₋) + ((1−β1)·d))`, `v = f32((β2·v₋) + ((1−β2)·(d·d)))` (Adam) or
 * `v = f32(v₋ − ((1−β2)·(d·d))·sign(v₋ − d·d))` (Yogi), `w = f32(w₋ + (η·m)/(√v + τ))` using the
 * stored f32 m and v, and `w = f32(w₋ + η·d)` for FedAvg. d·d is exact in float64 (24 + 24 bits).
 * ECMAScript fixes +, −, ×, ÷ and `Math.fround` to IEEE-754 round-to-nearest-even, never fuses a
 * multiply-add, and every Node target (x64, arm64) lowers `Math.sqrt` to the correctly rounded
 * IEEE-754 instruction, so every site computes the same bits; a site that did not would vote a
 * different H(w′) and the two-phase commit would abort rather than diverge.
 */
export function createStrategy(config: StrategyConfig): ServerStrategy {
  const resolved = resolveStrategyConfig(config);
  const { name } = resolved;
  const adaptive = keepsMoments(name);
  const initialState = (parameterCount: number): StrategyState => {
    if (!Number.isInteger(parameterCount) || parameterCount < 0) {
      throw new InvalidArgumentError(`parameterCount is ${parameterCount}, must be an integer ≥ 0`, {
        details: { name: 'parameterCount', value: String(parameterCount) },
      });
    }
    const n = adaptive ? parameterCount : 0;
    const v = new Float32Array(n);
    if (adaptive) v.fill(resolved.tau * resolved.tau);
    return { strategy: name, step: 0, m: new Float32Array(n), v };
  };
  return Object.freeze({
    name,
    config: resolved,
    clientProximalMu: resolved.mu,
    initialState,
    apply(parameters: Float32Array, meanDelta: Float32Array, state: StrategyState | null): StrategyResult {
      assertFloat32('parameters', parameters);
      assertFloat32('meanDelta', meanDelta);
      assertLength('meanDelta', meanDelta.length, parameters.length, 'parameters length');
      assertFiniteArray('parameters', parameters);
      assertFiniteArray('meanDelta', meanDelta);
      const prior = state ?? initialState(parameters.length);
      if (state !== null) assertStrategyState(state, name, parameters.length);
      if (prior.step >= Number.MAX_SAFE_INTEGER) {
        throw new InvalidArgumentError(`state.step is ${prior.step}; no further step is representable`);
      }
      const step = prior.step + 1;
      if (!adaptive) {
        const next = fedAvgStep(parameters, meanDelta, resolved.serverLearningRate);
        return {
          parameters: next,
          state: { strategy: name, step, m: new Float32Array(0), v: new Float32Array(0) },
        };
      }
      const { w, m, v } = adaptiveStep(parameters, meanDelta, prior.m, prior.v, resolved, name === 'fedyogi');
      return { parameters: w, state: { strategy: name, step, m, v } };
    },
  });
}

function assertFloat32(name: string, values: unknown): asserts values is Float32Array {
  if (!(values instanceof Float32Array)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array`, { details: { name } });
  }
}

/** w_{t+1}[i] = f32(w[i] + η·d[i]). */
function fedAvgStep(w: Float32Array, d: Float32Array, eta: number): Float32Array {
  const out = new Float32Array(w.length);
  for (let i = 0; i < w.length; i++) out[i] = w[i]! + eta * d[i]!;
  assertNoOverflow('parameters', out);
  return out;
}

function adaptiveStep(
  w: Float32Array,
  d: Float32Array,
  mPrev: Float32Array,
  vPrev: Float32Array,
  config: ResolvedStrategyConfig,
  yogi: boolean,
): { w: Float32Array; m: Float32Array; v: Float32Array } {
  const n = w.length;
  const { beta1, beta2, tau, serverLearningRate: eta } = config;
  const c1 = 1 - beta1;
  const c2 = 1 - beta2;
  const m = new Float32Array(n);
  const v = new Float32Array(n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const di = d[i]!;
    const d2 = di * di;
    m[i] = beta1 * mPrev[i]! + c1 * di;
    const vp = vPrev[i]!;
    if (yogi) {
      // sign(v₋ − d²) ∈ {−1, 0, +1}; written out so no ±0 or Math.sign subtleties enter.
      const diff = vp - d2;
      const s = diff > 0 ? 1 : diff < 0 ? -1 : 0;
      v[i] = vp - c2 * d2 * s;
    } else {
      v[i] = beta2 * vp + c2 * d2;
    }
    out[i] = w[i]! + (eta * m[i]!) / (Math.sqrt(v[i]!) + tau);
  }
  assertNoOverflow('m', m);
  assertNoOverflow('v', v);
  assertNoOverflow('parameters', out);
  return { w: out, m, v };
}

/** Finite inputs can still overflow float32 on the store; refuse rather than commit ±Infinity. */
function assertNoOverflow(name: string, values: Float32Array): void {
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (x - x !== 0) {
      throw new UpdateError(
        'UPDATE_NON_FINITE',
        `${name}[${i}] overflows float32 (${x}) in the server update`,
        {
          details: { name, index: i, value: String(x) },
        },
      );
    }
  }
}
