import { InvalidArgumentError } from '../../src/errors/index.ts';
import { logAbsBinomial, logAddExp } from './special-functions.ts';

/**
 * Integer Rényi orders 2…128 and 256, the orders at which the Skellam mechanism and its Poisson
 * subsampling are accounted (the amplification bound below holds at integer orders only). The same
 * list as google-research/federated `distributed_dp/accounting_utils.py`.
 */
export const INTEGER_RDP_ORDERS: readonly number[] = Object.freeze([
  ...Array.from({ length: 127 }, (_, i) => i + 2),
  256,
]);

/** Sensitivities of one site's contribution in the integer (scaled, rounded) domain. */
export interface IntegerSensitivity {
  /** L2 sensitivity Δ₂ in levels, finite > 0. */
  readonly l2: number;
  /** L1 sensitivity Δ₁ in levels, finite > 0. */
  readonly l1: number;
}

function assertPositive(name: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new InvalidArgumentError(`${name} is ${value}, it must be finite and > 0`, { details: { name } });
  }
}

function assertIntegerOrder(order: number): void {
  if (!(Number.isSafeInteger(order) && order >= 2)) {
    throw new InvalidArgumentError(`order ${order} must be an integer ≥ 2`, { details: { name: 'order' } });
  }
}

/**
 * RDP ε(α) of one release of the Skellam mechanism: an integer vector plus symmetric Skellam noise of
 * total variance `variance` per coordinate (the sum of every contributor's share: Skellam noise is
 * closed under addition, so the shares sum to exactly this distribution). Agarwal, Kairouz, Liu,
 * "The Skellam Mechanism for Differentially Private Federated Learning", NeurIPS 2021:
 *
 * `ε(α) = αΔ₂²/(2μ) + min{ ((2α − 1)Δ₂² + 6Δ₁)/(4μ²), 3Δ₁/(2μ) }`
 *
 * with μ = `variance` and Δ₁, Δ₂ in levels. As μ grows it approaches the Gaussian mechanism's
 * α/(2σ²) with σ² = μ/Δ₂².
 *
 * @param order - Rényi order α, finite and > 1
 * @param variance - μ, total noise variance per coordinate in levels², finite and > 0
 */
export function skellamRdp(order: number, sensitivity: IntegerSensitivity, variance: number): number {
  if (!(Number.isFinite(order) && order > 1)) {
    throw new InvalidArgumentError(`order ${order} must be finite and > 1`, { details: { name: 'order' } });
  }
  assertPositive('sensitivity.l2', sensitivity.l2);
  assertPositive('sensitivity.l1', sensitivity.l1);
  assertPositive('variance', variance);
  const { l1, l2 } = sensitivity;
  const mu = variance;
  const gaussian = (order * l2 * l2) / (2 * mu);
  return gaussian + Math.min(((2 * order - 1) * l2 * l2 + 6 * l1) / (4 * mu * mu), (3 * l1) / (2 * mu));
}

/**
 * RDP at integer order α of a mechanism run on a Poisson sample (each record, here each site, taken
 * independently with probability `q`), from the mechanism's own RDP `base(l)` at orders 2…α:
 * Zhu and Wang, "Poisson Subsampled Rényi Differential Privacy", ICML 2019, Theorem 5 (valid for
 * every mechanism):
 *
 * `ε'(α) ≤ 1/(α−1) · log[ (1−q)^{α−1}(αq − q + 1) + C(α,2) q² (1−q)^{α−2} e^{ε(2)}
 *                          + 3 Σ_{l=3}^{α} C(α,l) q^l (1−q)^{α−l} e^{(l−1)ε(l)} ]`
 *
 * and never more than `base(α)` itself (sampling cannot hurt). `q = 1` is `base(α)`, `q = 0` is 0.
 * The guarantee assumes the sample stays secret from whoever the ε is stated against.
 *
 * @param factor - the 3 of Theorem 5; Theorem 6 drops it (factor 1) for mechanisms that satisfy
 *   its extra condition, such as the Gaussian, where the bound equals the exact subsampled RDP.
 */
export function poissonSubsampledRdp(
  q: number,
  order: number,
  base: (order: number) => number,
  factor: 1 | 3 = 3,
): number {
  if (!(Number.isFinite(q) && q >= 0 && q <= 1)) {
    throw new InvalidArgumentError(`sampling rate q is ${q}, it must be in [0, 1]`, {
      details: { name: 'q' },
    });
  }
  assertIntegerOrder(order);
  const direct = base(order);
  if (q === 0) return 0;
  if (q === 1) return direct;
  const logQ = Math.log(q);
  const log1q = Math.log1p(-q);
  let sum = (order - 1) * log1q + Math.log(order * q - q + 1);
  sum = logAddExp(sum, logAbsBinomial(order, 2) + 2 * logQ + (order - 2) * log1q + base(2));
  const logFactor = Math.log(factor);
  for (let l = 3; l <= order; l++) {
    const term = logFactor + logAbsBinomial(order, l) + l * logQ + (order - l) * log1q + (l - 1) * base(l);
    sum = logAddExp(sum, term);
  }
  return Math.min(direct, sum / (order - 1));
}

/**
 * RDP at each integer order of `steps` rounds of the distributed Skellam mechanism with sites
 * sampled at rate `q`: {@link skellamRdp} amplified by {@link poissonSubsampledRdp}, composed by
 * multiplying by `steps`.
 */
export function sampledSkellamRdp(
  q: number,
  sensitivity: IntegerSensitivity,
  variance: number,
  steps: number,
  orders: readonly number[] = INTEGER_RDP_ORDERS,
): number[] {
  if (!(Number.isSafeInteger(steps) && steps >= 0)) {
    throw new InvalidArgumentError(`steps is ${steps}, it must be an integer ≥ 0`, {
      details: { name: 'steps' },
    });
  }
  for (const order of orders) assertIntegerOrder(order);
  const base = (order: number) => skellamRdp(order, sensitivity, variance);
  return orders.map((order) => (steps === 0 ? 0 : steps * poissonSubsampledRdp(q, order, base)));
}
