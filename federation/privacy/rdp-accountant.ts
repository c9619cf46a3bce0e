import { InvalidArgumentError } from '../../src/errors/index.ts';
import { logAbsBinomial, logAddExp, logErfc, logSubExp } from './special-functions.ts';

/**
 * Rényi orders the accountant evaluates by default: 1.1 … 10.9 in steps of 0.1, 11 … 63, 128,
 * 256, 512 and 1024 (the default of Google's `dp_accounting`, `DEFAULT_RDP_ORDERS`).
 */
export const DEFAULT_RDP_ORDERS: readonly number[] = Object.freeze([
  ...Array.from({ length: 99 }, (_, i) => Math.round((1.1 + i / 10) * 10) / 10),
  ...Array.from({ length: 53 }, (_, i) => 11 + i),
  128,
  256,
  512,
  1024,
]);

const LOG_HALF = Math.log(0.5);

/** Terms of the fractional-order series summed at most; beyond it the series is refused. */
const MAX_SERIES_TERMS = 100_000;

function assertOrders(orders: readonly number[]): void {
  if (orders.length === 0) throw new InvalidArgumentError('orders is empty', { details: { name: 'orders' } });
  for (const [i, a] of orders.entries()) {
    if (!(Number.isFinite(a) && a > 1)) {
      throw new InvalidArgumentError(`orders[${i}] is ${a}, every Rényi order must be finite and > 1`, {
        details: { name: `orders[${i}]` },
      });
    }
  }
}

/** log A_α of the sampled Gaussian mechanism at an integer order (Mironov, Talwar, Zhang 2019, §3.3): a binomial sum of positive terms. */
function logAInteger(q: number, sigma: number, alpha: number): number {
  let logA = Number.NEGATIVE_INFINITY;
  const logQ = Math.log(q);
  const log1mQ = Math.log1p(-q);
  for (let k = 0; k <= alpha; k++) {
    const term =
      logAbsBinomial(alpha, k) + k * logQ + (alpha - k) * log1mQ + (k * k - k) / (2 * sigma * sigma);
    logA = logAddExp(logA, term);
  }
  return logA;
}

/**
 * log A_α at a fractional order (Mironov, Talwar, Zhang 2019, §3.3): two series with erfc
 * weights around z₀ = σ² log(1/q − 1) + 1/2, binomial coefficients of changing sign summed apart
 * (the signed series of TensorFlow Privacy and Opacus; Google's `dp_accounting` adds |C(α, i)|,
 * an upper bound ≤ 3% above at α = 1.5).
 */
function logAFractional(q: number, sigma: number, alpha: number): number {
  const z0 = sigma * sigma * Math.log(1 / q - 1) + 0.5;
  const logQ = Math.log(q);
  const log1mQ = Math.log1p(-q);
  const s2 = Math.SQRT2 * sigma;
  let pos0 = Number.NEGATIVE_INFINITY;
  let pos1 = Number.NEGATIVE_INFINITY;
  let neg0 = Number.NEGATIVE_INFINITY;
  let neg1 = Number.NEGATIVE_INFINITY;
  let sign = 1;
  for (let i = 0; i < MAX_SERIES_TERMS; i++) {
    if (i > 0 && alpha - i + 1 < 0) sign = -sign;
    const logC = logAbsBinomial(alpha, i);
    const j = alpha - i;
    // C(α, i) q^a (1 − q)^b e^((a² − a)/2σ²) · erfc(x)/2, for the two series' (a, b) = (i, j) and (j, i).
    const term = (a: number, b: number, x: number) =>
      logC + a * logQ + b * log1mQ + (a * a - a) / (2 * sigma * sigma) + LOG_HALF + logErfc(x);
    const t0 = term(i, j, (i - z0) / s2);
    const t1 = term(j, i, (z0 - j) / s2);
    if (sign > 0) {
      pos0 = logAddExp(pos0, t0);
      pos1 = logAddExp(pos1, t1);
    } else {
      neg0 = logAddExp(neg0, t0);
      neg1 = logAddExp(neg1, t1);
    }
    if (Math.max(t0, t1) < -30 && i > alpha + 1)
      return logAddExp(logSubExp(pos0, neg0), logSubExp(pos1, neg1));
  }
  throw new InvalidArgumentError(
    `the RDP series at order ${alpha} (q ${q}, σ ${sigma}) did not converge in ${MAX_SERIES_TERMS} terms`,
    { details: { name: 'orders' } },
  );
}

/**
 * RDP ε(α) at each of `orders` of `steps` compositions of the Poisson-subsampled Gaussian
 * mechanism with sampling rate `q` (0 ≤ q ≤ 1) and noise multiplier `sigma` (noise standard
 * deviation over L2 sensitivity), by the exact formulas of Mironov, Talwar, Zhang (2019) §3.3.
 * `q = 1` is the plain Gaussian mechanism, α / (2σ²) a step; `q = 0` spends nothing.
 */
export function sampledGaussianRdp(
  q: number,
  sigma: number,
  steps: number,
  orders: readonly number[] = DEFAULT_RDP_ORDERS,
): number[] {
  if (!(Number.isFinite(q) && q >= 0 && q <= 1)) {
    throw new InvalidArgumentError(`sampling rate q is ${q}, it must be in [0, 1]`, {
      details: { name: 'q' },
    });
  }
  if (!(Number.isFinite(sigma) && sigma > 0)) {
    throw new InvalidArgumentError(`noise multiplier is ${sigma}, it must be finite and > 0`, {
      details: { name: 'sigma' },
    });
  }
  if (!(Number.isSafeInteger(steps) && steps >= 0)) {
    throw new InvalidArgumentError(`steps is ${steps}, it must be an integer ≥ 0`, {
      details: { name: 'steps' },
    });
  }
  assertOrders(orders);
  return orders.map((alpha) => {
    if (q === 0 || steps === 0) return 0;
    if (q === 1) return (steps * alpha) / (2 * sigma * sigma);
    const logA = Number.isInteger(alpha) ? logAInteger(q, sigma, alpha) : logAFractional(q, sigma, alpha);
    return (steps * logA) / (alpha - 1);
  });
}

/** How RDP becomes (ε, δ). */
export type RdpConversion =
  /** ε = rdp(α) + log(1/δ)/(α − 1) (Mironov 2017, Prop. 3; Abadi et al. 2016). */
  | 'classic'
  /**
   * ε = rdp(α) + log((α − 1)/α) − (log δ + log α)/(α − 1) (Canonne, Kamath, Steinke 2020, Prop. 12;
   * Balle et al. 2020, Thm. 21): never above `classic`.
   */
  | 'improved';

/** The smallest ε over `orders` for which RDP `rdp` (at those orders) gives (ε, δ)-DP, and its order. */
export function rdpToEpsilon(
  orders: readonly number[],
  rdp: readonly number[],
  delta: number,
  conversion: RdpConversion = 'improved',
): { epsilon: number; order: number } {
  assertOrders(orders);
  if (rdp.length !== orders.length) {
    throw new InvalidArgumentError(`rdp has ${rdp.length} values for ${orders.length} orders`, {
      details: { name: 'rdp' },
    });
  }
  if (!(Number.isFinite(delta) && delta > 0 && delta < 1)) {
    throw new InvalidArgumentError(`delta is ${delta}, it must be in (0, 1)`, { details: { name: 'delta' } });
  }
  let best = { epsilon: Number.POSITIVE_INFINITY, order: Number.NaN };
  for (const [i, alpha] of orders.entries()) {
    const r = rdp[i]!;
    if (Number.isNaN(r) || r < 0) {
      throw new InvalidArgumentError(`rdp[${i}] is ${r}, it must be ≥ 0`, { details: { name: `rdp[${i}]` } });
    }
    let epsilon: number;
    if (conversion === 'classic') {
      epsilon = r - Math.log(delta) / (alpha - 1);
    } else if (delta * delta + Math.expm1(-r) > 0) {
      epsilon = 0; // so little spent that (0, δ) already holds at this order (dp_accounting's KL bound)
    } else if (alpha > 1.01) {
      epsilon = r + Math.log1p(-1 / alpha) - Math.log(delta * alpha) / (alpha - 1);
    } else {
      epsilon = Number.POSITIVE_INFINITY; // numerically unstable this close to 1
    }
    if (epsilon < best.epsilon) best = { epsilon, order: alpha };
  }
  return { epsilon: Math.max(0, best.epsilon), order: best.order };
}
