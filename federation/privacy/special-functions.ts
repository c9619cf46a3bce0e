// Special functions the privacy accountant needs in log space, where JavaScript's Math has none.

/** Lanczos coefficients (g = 7, n = 9): |relative error| of Γ below 2e-15 for Re x ≥ 1/2. */
const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];
const HALF_LOG_2PI = 0.5 * Math.log(2 * Math.PI);

/**
 * log |Γ(x)| for any finite x that is not 0 or a negative integer (there Γ has poles: +∞).
 * Lanczos for x ≥ 1/2, the reflection formula Γ(x)Γ(1 − x) = π / sin(πx) below.
 */
export function logAbsGamma(x: number): number {
  if (!Number.isFinite(x)) throw new RangeError(`logAbsGamma of ${x}`);
  if (x < 0.5) {
    if (Number.isInteger(x)) return Number.POSITIVE_INFINITY; // sin(πx) is not exactly 0 in floating point
    return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logAbsGamma(1 - x);
  }
  const z = x - 1;
  let a = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) a += LANCZOS[i]! / (z + i);
  const t = z + LANCZOS_G + 0.5;
  return HALF_LOG_2PI + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** log |C(n, k)| = log |Γ(n+1) / (Γ(k+1) Γ(n−k+1))| for real n and integer k ≥ 0. */
export function logAbsBinomial(n: number, k: number): number {
  return logAbsGamma(n + 1) - logAbsGamma(k + 1) - logAbsGamma(n - k + 1);
}

/**
 * log erfc(x), finite for every finite x (erfc underflows past x ≈ 26.5, its log does not).
 * Chebyshev fit of Press et al., Numerical Recipes (2nd ed., §6.2, `erfcc`): fractional error
 * of erfc below 1.2e-7 everywhere, written here as log t − x² + P(t) so it never underflows.
 */
export function logErfc(x: number): number {
  if (Number.isNaN(x)) throw new RangeError('logErfc of NaN');
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const p =
    -1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t *
                  (-0.18628806 +
                    t *
                      (0.27886807 +
                        t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  const logUpper = Math.log(t) - z * z + p; // log erfc(|x|)
  return x >= 0 ? logUpper : Math.log(2 - Math.exp(logUpper));
}

/** log(e^a + e^b) without overflow. */
export function logAddExp(a: number, b: number): number {
  if (a === Number.NEGATIVE_INFINITY) return b;
  if (b === Number.NEGATIVE_INFINITY) return a;
  const m = Math.max(a, b);
  return m + Math.log1p(Math.exp(-Math.abs(a - b)));
}

/** log(e^a − e^b) for a ≥ b (−∞ when equal). */
export function logSubExp(a: number, b: number): number {
  if (b === Number.NEGATIVE_INFINITY) return a;
  if (!(a > b)) return Number.NEGATIVE_INFINITY;
  return a + Math.log1p(-Math.exp(b - a));
}
