import { denseBackwardInputInto, denseForwardInto, denseWeightGradientInto } from './dense.ts';
import { createNonZeroRows, indexNonZero, type NonZeroRows, SPARSE_DENSITY_LIMIT } from './non-zero-rows.ts';

/*
 * The 2-D convolution loops the CPU engine trains with (stride 1, zero padding; layouts as in
 * `Conv2dShape`: x [batch][channels][height][width], W [filters][channels][kernel][kernel] read
 * from `w` at `wOffset`, y [batch][filters][outHeight][outWidth]). A convolution is a dense layer
 * applied at every output position: im2col gathers each position's receptive field into one row
 * of a [positions][channels·kernel·kernel] matrix, and the dense loops of `dense.ts` (float64 dot
 * products, zero-skipping) do the arithmetic, so W is exactly a dense layer's [outputs][inputs].
 * Samples are processed in chunks whose im2col matrix stays below {@link CONV_CHUNK_ENTRIES}.
 * Nothing here validates: the public boundary (`cpu-kernels.ts`, `cpu-engine.ts`) checks shapes
 * and finiteness.
 */

/** Most float32 entries one chunk's im2col matrix may hold (8 MiB). */
export const CONV_CHUNK_ENTRIES = 1 << 21;

/** Per-sample geometry of a stride-1 convolution. */
export interface Conv2dGeometry {
  readonly channels: number;
  readonly height: number;
  readonly width: number;
  readonly filters: number;
  /** Kernel side k. */
  readonly kernel: number;
  /** Zero rows/columns added on each side: (k − 1) / 2 for 'same', 0 for 'valid'. */
  readonly pad: number;
  /** height + 2·pad − k + 1 (≥ 1). */
  readonly outHeight: number;
  /** width + 2·pad − k + 1 (≥ 1). */
  readonly outWidth: number;
  /** outHeight·outWidth: output positions per sample and filter. */
  readonly positions: number;
  /** channels·k·k: the fan-in, one row of W. */
  readonly patch: number;
}

/**
 * The geometry of a stride-1 convolution. Inputs are trusted (the boundary checks them with
 * `assertConv2dShape`): 'same' needs an odd kernel, 'valid' a kernel no larger than the input.
 */
export function conv2dGeometry(
  channels: number,
  height: number,
  width: number,
  filters: number,
  kernel: number,
  padding: 'same' | 'valid',
): Conv2dGeometry {
  const pad = padding === 'same' ? (kernel - 1) >> 1 : 0;
  const outHeight = height + 2 * pad - kernel + 1;
  const outWidth = width + 2 * pad - kernel + 1;
  return {
    channels,
    height,
    width,
    filters,
    kernel,
    pad,
    outHeight,
    outWidth,
    positions: outHeight * outWidth,
    patch: channels * kernel * kernel,
  };
}

/**
 * Buffers one convolution layer needs for up to `chunk` samples at a time, allocated once and
 * reused for every mini-batch.
 */
export interface Conv2dScratch {
  readonly geometry: Conv2dGeometry;
  /** Samples per chunk (≥ 1). */
  readonly chunk: number;
  /** im2col matrix [chunk·positions][patch]. */
  readonly col: Float32Array;
  /** Non-zero columns of `col`'s rows. */
  readonly colRows: NonZeroRows;
  /** Position-major outputs or output gradients [chunk·positions][filters]. */
  readonly rows: Float32Array;
  /** Non-zero columns of `rows` (training only). */
  readonly rowsNonZero: NonZeroRows;
  /** ∂L/∂col [chunk·positions][patch] (training only). */
  readonly dcol: Float32Array;
  /** One chunk's weight and bias gradient, summed into the total from the second chunk on (training only). */
  readonly dw: Float32Array;
  readonly db: Float32Array;
}

/**
 * Allocates a {@link Conv2dScratch} for batches of up to `batch` samples; a chunk holds as many
 * samples as keep its matrices within `chunkEntries` float32 entries (at least one sample).
 */
export function createConv2dScratch(
  geometry: Conv2dGeometry,
  batch: number,
  training: boolean,
  chunkEntries = CONV_CHUNK_ENTRIES,
): Conv2dScratch {
  const { positions, patch, filters } = geometry;
  const perSample = positions * Math.max(patch, filters);
  const chunk = Math.max(1, Math.min(batch, Math.floor(chunkEntries / perSample)));
  const rowCount = chunk * positions;
  const multiChunk = chunk < batch;
  return {
    geometry,
    chunk,
    col: new Float32Array(rowCount * patch),
    colRows: createNonZeroRows(rowCount, patch),
    rows: new Float32Array(rowCount * filters),
    rowsNonZero: training ? createNonZeroRows(rowCount, filters) : createNonZeroRows(0, 0),
    dcol: new Float32Array(training ? rowCount * patch : 0),
    dw: new Float32Array(training && multiChunk ? filters * patch : 0),
    db: new Float32Array(training && multiChunk ? filters : 0),
  };
}

/**
 * im2col: row s·positions + oy·outWidth + ox of `col` receives the receptive field of output
 * (oy, ox) of sample `first + s`, in W's order (channel, kernel row, kernel column), zero where it
 * falls in the padding.
 */
export function im2colInto(
  x: Float32Array,
  first: number,
  count: number,
  g: Conv2dGeometry,
  col: Float32Array,
): void {
  const { channels, height, width, kernel, pad, outHeight, outWidth } = g;
  const plane = height * width;
  let dst = 0;
  for (let s = 0; s < count; s++) {
    const sample = (first + s) * channels * plane;
    for (let oy = 0; oy < outHeight; oy++) {
      for (let ox = 0; ox < outWidth; ox++) {
        const x0 = ox - pad;
        for (let c = 0; c < channels; c++) {
          const base = sample + c * plane;
          for (let ki = 0; ki < kernel; ki++) {
            const iy = oy - pad + ki;
            if (iy < 0 || iy >= height) {
              col.fill(0, dst, dst + kernel);
              dst += kernel;
              continue;
            }
            const row = base + iy * width;
            for (let kj = 0; kj < kernel; kj++) {
              const ix = x0 + kj;
              col[dst++] = ix >= 0 && ix < width ? x[row + ix]! : 0;
            }
          }
        }
      }
    }
  }
}

/**
 * col2im, the adjoint of {@link im2colInto}: every input value of samples first … first + count − 1
 * receives the sum (float64, then stored) of the `dcol` entries that gathered it. Overwrites those
 * samples of `dx`.
 */
export function col2imInto(
  dcol: Float32Array,
  first: number,
  count: number,
  g: Conv2dGeometry,
  dx: Float32Array,
): void {
  const { channels, height, width, kernel, pad, outHeight, outWidth, positions, patch } = g;
  const plane = height * width;
  const kk = kernel * kernel;
  for (let s = 0; s < count; s++) {
    const sample = (first + s) * channels * plane;
    const rowBase = s * positions;
    for (let c = 0; c < channels; c++) {
      const base = sample + c * plane;
      const cOffset = c * kk;
      for (let iy = 0; iy < height; iy++) {
        // Output rows oy = iy + pad − ki that exist.
        const kiMin = Math.max(0, iy + pad - outHeight + 1);
        const kiMax = Math.min(kernel - 1, iy + pad);
        for (let ix = 0; ix < width; ix++) {
          const kjMin = Math.max(0, ix + pad - outWidth + 1);
          const kjMax = Math.min(kernel - 1, ix + pad);
          let sum = 0;
          for (let ki = kiMin; ki <= kiMax; ki++) {
            const oy = iy + pad - ki;
            const kOffset = cOffset + ki * kernel;
            for (let kj = kjMin; kj <= kjMax; kj++) {
              const ox = ix + pad - kj;
              sum += dcol[(rowBase + oy * outWidth + ox) * patch + kOffset + kj]!;
            }
          }
          dx[base + iy * width + ix] = sum;
        }
      }
    }
  }
}

/** Fills `col` for one chunk and indexes its non-zero entries; returns the non-zero fraction. */
function gatherChunk(x: Float32Array, first: number, count: number, scratch: Conv2dScratch): number {
  const g = scratch.geometry;
  im2colInto(x, first, count, g, scratch.col);
  const rowCount = count * g.positions;
  return indexNonZero(scratch.col, rowCount, g.patch, scratch.colRows) / (rowCount * g.patch);
}

/**
 * y = conv2d(x, W) + b for the first `batch` samples (see the file comment for layouts); `w` holds
 * W at `wOffset` and `bias` the bias at `biasOffset` (the model's flat layout).
 */
export function conv2dForwardInto(
  x: Float32Array,
  w: Float32Array,
  wOffset: number,
  bias: Float32Array,
  biasOffset: number,
  y: Float32Array,
  batch: number,
  scratch: Conv2dScratch,
): void {
  const g = scratch.geometry;
  const { positions, patch, filters } = g;
  const rows = scratch.rows;
  for (let first = 0; first < batch; first += scratch.chunk) {
    const count = Math.min(scratch.chunk, batch - first);
    const density = gatherChunk(x, first, count, scratch);
    const sparse = density < SPARSE_DENSITY_LIMIT.forward ? scratch.colRows : null;
    denseForwardInto(
      scratch.col,
      w,
      wOffset,
      bias,
      biasOffset,
      rows,
      count * positions,
      patch,
      filters,
      sparse,
    );
    // [position][filter] → [filter][position], per sample.
    for (let s = 0; s < count; s++) {
      const out = (first + s) * filters * positions;
      const from = s * positions * filters;
      for (let f = 0; f < filters; f++) {
        const yf = out + f * positions;
        for (let p = 0; p < positions; p++) y[yf + p] = rows[from + p * filters + f]!;
      }
    }
  }
}

/**
 * Backward of {@link conv2dForwardInto} for the first `batch` samples, given dy = ∂L/∂y: writes
 * dW to `dw` at `wOffset` and db to `db` at `biasOffset` (overwritten, summed over samples and
 * positions) and, unless `dx` is null (a first layer needs none), dx = ∂L/∂x (overwritten).
 * `scratch` must have been created with `training` true.
 */
export function conv2dBackwardInto(
  x: Float32Array,
  w: Float32Array,
  wOffset: number,
  dy: Float32Array,
  dx: Float32Array | null,
  dw: Float32Array,
  dwOffset: number,
  db: Float32Array,
  dbOffset: number,
  batch: number,
  scratch: Conv2dScratch,
): void {
  const g = scratch.geometry;
  const { positions, patch, filters } = g;
  const rows = scratch.rows;
  for (let first = 0; first < batch; first += scratch.chunk) {
    const count = Math.min(scratch.chunk, batch - first);
    const rowCount = count * positions;
    const density = gatherChunk(x, first, count, scratch);
    // dy [filter][position] → rows [position][filter], per sample.
    for (let s = 0; s < count; s++) {
      const from = (first + s) * filters * positions;
      const to = s * positions * filters;
      for (let f = 0; f < filters; f++) {
        const dyf = from + f * positions;
        for (let p = 0; p < positions; p++) rows[to + p * filters + f] = dy[dyf + p]!;
      }
    }
    const sparse = density < SPARSE_DENSITY_LIMIT.weightGradient ? scratch.colRows : null;
    if (first === 0) {
      denseWeightGradientInto(
        scratch.col,
        sparse,
        rows,
        dw,
        dwOffset,
        db,
        dbOffset,
        rowCount,
        patch,
        filters,
      );
    } else {
      denseWeightGradientInto(
        scratch.col,
        sparse,
        rows,
        scratch.dw,
        0,
        scratch.db,
        0,
        rowCount,
        patch,
        filters,
      );
      const n = filters * patch;
      for (let i = 0; i < n; i++) dw[dwOffset + i] = dw[dwOffset + i]! + scratch.dw[i]!;
      for (let f = 0; f < filters; f++) db[dbOffset + f] = db[dbOffset + f]! + scratch.db[f]!;
    }
    if (dx !== null) {
      indexNonZero(rows, rowCount, filters, scratch.rowsNonZero);
      denseBackwardInputInto(w, wOffset, rows, scratch.rowsNonZero, scratch.dcol, rowCount, patch, filters);
      col2imInto(scratch.dcol, first, count, g, dx);
    }
  }
}
