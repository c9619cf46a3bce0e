import type { NonZeroRows } from './non-zero-rows.ts';

/*
 * The dense-layer loops the CPU engine trains with. Shapes as in `Kernels`: x is [batch][inputs],
 * W is [outputs][inputs] (read from `w` at `wOffset`, the model's flat layout), y and dy are
 * [batch][outputs], all row-major Float32Array. Dot products accumulate in float64 locals and are
 * stored as float32. Nothing here validates or allocates per call: callers own the buffers and
 * the public boundary (`cpu-kernels.ts`, `cpu-engine.ts`) checks shapes and finiteness.
 */

/** Rows of dy that are non-zero in one output column (grown on demand, reused across calls). */
let columnRows = new Int32Array(64);

/**
 * y = x·Wᵀ + b for the first `batch` rows. With `xRows` (the non-zero columns of x, see
 * `indexNonZero`) only non-zero inputs are visited; the sum is the same up to float64 rounding
 * order. Outputs are computed four at a time so each loaded x[i] feeds four independent chains.
 */
export function denseForwardInto(
  x: Float32Array,
  w: Float32Array,
  wOffset: number,
  bias: Float32Array,
  biasOffset: number,
  y: Float32Array,
  batch: number,
  inputs: number,
  outputs: number,
  xRows: NonZeroRows | null,
): void {
  const blocked = outputs - (outputs % 4);
  for (let o = 0; o < blocked; o += 4) {
    const w0 = wOffset + o * inputs;
    const w1 = w0 + inputs;
    const w2 = w1 + inputs;
    const w3 = w2 + inputs;
    const b0 = bias[biasOffset + o]!;
    const b1 = bias[biasOffset + o + 1]!;
    const b2 = bias[biasOffset + o + 2]!;
    const b3 = bias[biasOffset + o + 3]!;
    let r = 0;
    if (xRows === null) {
      // Two rows × four outputs: each pass loads 2 x and 4 W values for 8 multiply-adds.
      for (; r + 2 <= batch; r += 2) {
        const xa = r * inputs;
        const xb = xa + inputs;
        let a0 = 0;
        let a1 = 0;
        let a2 = 0;
        let a3 = 0;
        let c0 = 0;
        let c1 = 0;
        let c2 = 0;
        let c3 = 0;
        for (let i = 0; i < inputs; i++) {
          const u = x[xa + i]!;
          const v = x[xb + i]!;
          const p0 = w[w0 + i]!;
          const p1 = w[w1 + i]!;
          const p2 = w[w2 + i]!;
          const p3 = w[w3 + i]!;
          a0 += u * p0;
          a1 += u * p1;
          a2 += u * p2;
          a3 += u * p3;
          c0 += v * p0;
          c1 += v * p1;
          c2 += v * p2;
          c3 += v * p3;
        }
        const ya = r * outputs + o;
        const yb = ya + outputs;
        y[ya] = a0 + b0;
        y[ya + 1] = a1 + b1;
        y[ya + 2] = a2 + b2;
        y[ya + 3] = a3 + b3;
        y[yb] = c0 + b0;
        y[yb + 1] = c1 + b1;
        y[yb + 2] = c2 + b2;
        y[yb + 3] = c3 + b3;
      }
    }
    for (; r < batch; r++) {
      const xr = r * inputs;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      if (xRows === null) {
        for (let i = 0; i < inputs; i++) {
          const v = x[xr + i]!;
          s0 += v * w[w0 + i]!;
          s1 += v * w[w1 + i]!;
          s2 += v * w[w2 + i]!;
          s3 += v * w[w3 + i]!;
        }
      } else {
        const index = xRows.index;
        const end = xr + xRows.count[r]!;
        for (let k = xr; k < end; k++) {
          const i = index[k]!;
          const v = x[xr + i]!;
          s0 += v * w[w0 + i]!;
          s1 += v * w[w1 + i]!;
          s2 += v * w[w2 + i]!;
          s3 += v * w[w3 + i]!;
        }
      }
      const yr = r * outputs + o;
      y[yr] = s0 + b0;
      y[yr + 1] = s1 + b1;
      y[yr + 2] = s2 + b2;
      y[yr + 3] = s3 + b3;
    }
  }
  for (let o = blocked; o < outputs; o++) {
    const w0 = wOffset + o * inputs;
    const b0 = bias[biasOffset + o]!;
    for (let r = 0; r < batch; r++) {
      const xr = r * inputs;
      let s0 = 0;
      if (xRows === null) {
        for (let i = 0; i < inputs; i++) s0 += x[xr + i]! * w[w0 + i]!;
      } else {
        const index = xRows.index;
        const end = xr + xRows.count[r]!;
        for (let k = xr; k < end; k++) {
          const i = index[k]!;
          s0 += x[xr + i]! * w[w0 + i]!;
        }
      }
      y[r * outputs + o] = s0 + b0;
    }
  }
}

/**
 * dx = dy·W for the first `batch` rows, visiting only the non-zero entries of dy (`dyRows`, see
 * `indexNonZero` with width `outputs`). Four rows of W are folded into each pass over dx[r], the
 * four products summed in float64 before the float32 store.
 */
export function denseBackwardInputInto(
  w: Float32Array,
  wOffset: number,
  dy: Float32Array,
  dyRows: NonZeroRows,
  dx: Float32Array,
  batch: number,
  inputs: number,
  outputs: number,
): void {
  dx.fill(0, 0, batch * inputs);
  const index = dyRows.index;
  for (let r = 0; r < batch; r++) {
    const xr = r * inputs;
    const yr = r * outputs;
    const end = yr + dyRows.count[r]!;
    let k = yr;
    for (; k + 4 <= end; k += 4) {
      const o0 = index[k]!;
      const o1 = index[k + 1]!;
      const o2 = index[k + 2]!;
      const o3 = index[k + 3]!;
      const d0 = dy[yr + o0]!;
      const d1 = dy[yr + o1]!;
      const d2 = dy[yr + o2]!;
      const d3 = dy[yr + o3]!;
      const w0 = wOffset + o0 * inputs;
      const w1 = wOffset + o1 * inputs;
      const w2 = wOffset + o2 * inputs;
      const w3 = wOffset + o3 * inputs;
      for (let i = 0; i < inputs; i++) {
        dx[xr + i] = dx[xr + i]! + d0 * w[w0 + i]! + d1 * w[w1 + i]! + d2 * w[w2 + i]! + d3 * w[w3 + i]!;
      }
    }
    for (; k < end; k++) {
      const o0 = index[k]!;
      const d0 = dy[yr + o0]!;
      const w0 = wOffset + o0 * inputs;
      for (let i = 0; i < inputs; i++) dx[xr + i] = dx[xr + i]! + d0 * w[w0 + i]!;
    }
  }
}

/**
 * dW = dyᵀ·x written to `dw` at `wOffset` and db = Σ_batch dy written to `db` at `biasOffset`
 * (both overwritten, not accumulated). Rows whose dy is zero for an output are skipped; with
 * `xRows` only non-zero inputs are visited, otherwise four batch rows are folded per pass.
 */
export function denseWeightGradientInto(
  x: Float32Array,
  xRows: NonZeroRows | null,
  dy: Float32Array,
  dw: Float32Array,
  wOffset: number,
  db: Float32Array,
  biasOffset: number,
  batch: number,
  inputs: number,
  outputs: number,
): void {
  if (columnRows.length < batch) columnRows = new Int32Array(batch);
  const rows = columnRows;
  for (let o = 0; o < outputs; o++) {
    const wo = wOffset + o * inputs;
    let sum = 0;
    let n = 0;
    for (let r = 0; r < batch; r++) {
      const d = dy[r * outputs + o]!;
      if (d !== 0) {
        sum += d;
        rows[n++] = r;
      }
    }
    db[biasOffset + o] = sum;
    if (xRows !== null || n < 4) {
      dw.fill(0, wo, wo + inputs);
    }
    if (xRows !== null) {
      const index = xRows.index;
      for (let j = 0; j < n; j++) {
        const r = rows[j]!;
        const d = dy[r * outputs + o]!;
        const xr = r * inputs;
        const end = xr + xRows.count[r]!;
        for (let k = xr; k < end; k++) {
          const i = index[k]!;
          dw[wo + i] = dw[wo + i]! + d * x[xr + i]!;
        }
      }
      continue;
    }
    let j = 0;
    if (n >= 4) {
      // The first four rows write the row of dW, so it needs no zeroing.
      const x0 = rows[0]! * inputs;
      const x1 = rows[1]! * inputs;
      const x2 = rows[2]! * inputs;
      const x3 = rows[3]! * inputs;
      const d0 = dy[rows[0]! * outputs + o]!;
      const d1 = dy[rows[1]! * outputs + o]!;
      const d2 = dy[rows[2]! * outputs + o]!;
      const d3 = dy[rows[3]! * outputs + o]!;
      for (let i = 0; i < inputs; i++) {
        dw[wo + i] = d0 * x[x0 + i]! + d1 * x[x1 + i]! + d2 * x[x2 + i]! + d3 * x[x3 + i]!;
      }
      j = 4;
    }
    for (; j + 4 <= n; j += 4) {
      const r0 = rows[j]!;
      const r1 = rows[j + 1]!;
      const r2 = rows[j + 2]!;
      const r3 = rows[j + 3]!;
      const d0 = dy[r0 * outputs + o]!;
      const d1 = dy[r1 * outputs + o]!;
      const d2 = dy[r2 * outputs + o]!;
      const d3 = dy[r3 * outputs + o]!;
      const x0 = r0 * inputs;
      const x1 = r1 * inputs;
      const x2 = r2 * inputs;
      const x3 = r3 * inputs;
      for (let i = 0; i < inputs; i++) {
        dw[wo + i] = dw[wo + i]! + d0 * x[x0 + i]! + d1 * x[x1 + i]! + d2 * x[x2 + i]! + d3 * x[x3 + i]!;
      }
    }
    for (; j < n; j++) {
      const r0 = rows[j]!;
      const d0 = dy[r0 * outputs + o]!;
      const x0 = r0 * inputs;
      for (let i = 0; i < inputs; i++) dw[wo + i] = dw[wo + i]! + d0 * x[x0 + i]!;
    }
  }
}
