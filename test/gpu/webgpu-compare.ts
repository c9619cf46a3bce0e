import { expect } from 'vitest';

/** `n` values uniform in (−scale, scale), a `zeroFraction` of them exactly 0. */
export function randomArray(next: () => number, n: number, scale = 1, zeroFraction = 0): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = next() < zeroFraction ? 0 : (next() * 2 - 1) * scale;
  return out;
}

/** |a| element-wise: fed to the CPU kernels it gives Σ|terms| per output, the tolerance's scale. */
export const abs = (a: Float32Array): Float32Array => a.map(Math.abs);

/** Index and size of the worst violation of |a − b| ≤ bound(i), or null. */
export function worst(a: Float32Array, b: Float32Array, bound: (i: number) => number): string | null {
  expect(a.length).toBe(b.length);
  let bad: string | null = null;
  let excess = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    const limit = bound(i);
    if (!(d <= limit) && d / limit > excess) {
      excess = d / limit;
      bad = `index ${i}: ${a[i]} vs ${b[i]} (|Δ| ${d}, bound ${limit})`;
    }
  }
  return bad;
}

/** Largest |a[i] − b[i]|. */
export function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

/** Index of the first element where `a` and `b` differ (or their lengths do), −1 when identical. */
export function firstMismatch(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (!Object.is(a[i], b[i])) return i;
  return a.length === b.length ? -1 : n;
}

/**
 * Checks an evaluation's confusion matrix against its data: classes × classes, row `label` summing
 * to that label's rows, the diagonal to accuracy · count; equal to `reference`'s when that has one.
 */
export function expectConfusion(
  result: { accuracy: number; count: number; confusion?: Uint32Array },
  data: { labels: Uint8Array; count: number; classCount: number },
  reference?: { confusion?: Uint32Array },
): void {
  const classes = data.classCount;
  const confusion = result.confusion;
  expect(confusion).toBeInstanceOf(Uint32Array);
  expect(confusion!.length).toBe(classes * classes);
  const perLabel = new Array<number>(classes).fill(0);
  for (const label of data.labels) perLabel[label]!++;
  let trace = 0;
  for (let t = 0; t < classes; t++) {
    let row = 0;
    for (let p = 0; p < classes; p++) row += confusion![t * classes + p]!;
    expect(row).toBe(perLabel[t]);
    trace += confusion![t * classes + t]!;
  }
  expect(trace).toBe(Math.round(result.accuracy * result.count));
  if (reference?.confusion !== undefined) expect(confusion).toEqual(reference.confusion);
}
