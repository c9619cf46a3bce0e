/**
 * Column indices of the non-zero entries of each row of a [batch][width] matrix, so the dense
 * kernels can skip zeros (MNIST pixels are ~80% zero, ReLU activations about half).
 *
 * Row b's indices are `index[b·width … b·width + count[b])`, ascending. Buffers are sized for the
 * largest batch once and reused; a smaller batch uses a prefix.
 */
export interface NonZeroRows {
  readonly index: Int32Array;
  readonly count: Int32Array;
}

/** Allocates {@link NonZeroRows} for up to `batch` rows of `width` columns. */
export function createNonZeroRows(batch: number, width: number): NonZeroRows {
  return { index: new Int32Array(batch * width), count: new Int32Array(batch) };
}

/**
 * Fills `rows` with the non-zero columns of the first `batch` rows of `x`.
 *
 * @returns the total number of non-zero entries.
 */
export function indexNonZero(x: Float32Array, batch: number, width: number, rows: NonZeroRows): number {
  const { index, count } = rows;
  let total = 0;
  for (let b = 0; b < batch; b++) {
    const base = b * width;
    let k = base;
    for (let i = 0; i < width; i++) {
      if (x[base + i] !== 0) index[k++] = i;
    }
    count[b] = k - base;
    total += k - base;
  }
  return total;
}

/**
 * Densities (non-zero fraction of a layer's input) below which the indexed loops beat the dense
 * ones, measured on the 2NN's layers with V8: the forward gather pays off up to ~2/3 dense, the
 * weight-gradient scatter only below ~2/5.
 */
export const SPARSE_DENSITY_LIMIT = Object.freeze({ forward: 0.65, weightGradient: 0.4 });
