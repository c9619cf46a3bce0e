import { checkUpdates } from './check-updates.ts';

/**
 * Coordinate-wise median (Yin et al. 2018): `out[i]` is the median of `updates[0][i], …,
 * updates[n−1][i]`; for even n the mean of the two middle values, computed in float64 and rounded
 * once to float32 (a zero comes out as +0). Robust to fewer than n/2 arbitrary updates per coordinate. The result does not
 * depend on the order of `updates`.
 *
 * Runs in O(n·d) expected time with one scratch array of n doubles (quickselect per coordinate),
 * so a round of 100 updates of 1.7M parameters allocates nothing per coordinate.
 *
 * @param updates - at least one, all the same length, every value finite (index named); not modified
 * @returns a fresh Float32Array of length d
 */
export function coordinateMedian(updates: readonly Float32Array[]): Float32Array {
  const d = checkUpdates(updates);
  const n = updates.length;
  const out = new Float32Array(d);
  const scratch = new Float64Array(n);
  const upper = n >> 1;
  for (let i = 0; i < d; i++) {
    for (let k = 0; k < n; k++) scratch[k] = updates[k]![i]!;
    selectKth(scratch, upper);
    let value = scratch[upper]!;
    if ((n & 1) === 0) {
      // After selection every value left of `upper` is ≤ it; the lower middle is their maximum.
      let lower = scratch[0]!;
      for (let k = 1; k < upper; k++) if (scratch[k]! > lower) lower = scratch[k]!;
      value = (value + lower) / 2;
    }
    // + 0 turns −0 into +0: which signed zero quickselect lands on depends on the input order
    // (and a tiny negative mean can round to −0 in float32).
    out[i] = Math.fround(value) + 0;
  }
  return out;
}

/**
 * Hoare-partition quickselect: reorders `a` so that `a[k]` is the value of rank k (0-based),
 * everything before it ≤ it and everything after it ≥ it. Middle-element pivot; values are finite.
 */
function selectKth(a: Float64Array, k: number): void {
  let lo = 0;
  let hi = a.length - 1;
  while (hi > lo) {
    const pivot = a[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}
