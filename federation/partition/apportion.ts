import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * Splits the integer `total` into parts proportional to `weights` by the largest-remainder
 * (Hamilton) method: each part gets ⌊total·wᵢ/Σw⌋, and the rows left over go one each to the
 * largest fractional remainders, ties to the lower index. The parts sum to `total` exactly, and
 * no part exceeds ⌈total·wᵢ/Σw⌉. Weights must be finite and ≥ 0 with a positive sum.
 */
export function apportion(total: number, weights: ArrayLike<number>): number[] {
  if (!Number.isInteger(total) || total < 0) {
    throw new InvalidArgumentError(`total must be an integer ≥ 0, got ${total}`);
  }
  let sum = 0;
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i]!;
    if (!(w >= 0) || !Number.isFinite(w)) {
      throw new InvalidArgumentError(`weights[${i}] is ${w}; weights must be finite and ≥ 0`);
    }
    sum += w;
  }
  if (!(sum > 0)) throw new InvalidArgumentError('weights must have a positive sum');
  const parts: number[] = [];
  const remainders: { index: number; frac: number }[] = [];
  let assigned = 0;
  for (let i = 0; i < weights.length; i++) {
    const exact = (total * weights[i]!) / sum;
    const whole = Math.min(total, Math.floor(exact));
    parts.push(whole);
    assigned += whole;
    remainders.push({ index: i, frac: exact - whole });
  }
  remainders.sort((a, b) => b.frac - a.frac || a.index - b.index);
  for (let k = 0; assigned < total; k = (k + 1) % remainders.length) {
    const i = remainders[k]!.index;
    parts[i] = parts[i]! + 1;
    assigned++;
  }
  // Float rounding may put Σ⌊·⌋ one over `total`; take back from the smallest remainders.
  for (let k = remainders.length - 1; assigned > total; k = (k + remainders.length - 1) % remainders.length) {
    const i = remainders[k]!.index;
    if (parts[i]! > 0) {
      parts[i] = parts[i]! - 1;
      assigned--;
    }
  }
  return parts;
}
