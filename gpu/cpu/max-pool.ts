/*
 * The max-pooling loops the CPU engine trains with: window `size` × `size`, stride `size`, no
 * padding, x [batch][channels][height][width] → y [batch][channels][⌊height/size⌋][⌊width/size⌋]
 * (see `PoolShape`). Nothing here validates or allocates: the public boundary checks shapes.
 */

/**
 * y = max over each window of the first `batch` samples, and `argmax` = the flat index into x of
 * the maximum chosen: the first one in row-major window order (a later value must be strictly
 * greater to win).
 */
export function maxPoolForwardInto(
  x: Float32Array,
  y: Float32Array,
  argmax: Uint32Array,
  batch: number,
  channels: number,
  height: number,
  width: number,
  size: number,
): void {
  const outHeight = Math.floor(height / size);
  const outWidth = Math.floor(width / size);
  const planes = batch * channels;
  const plane = height * width;
  let out = 0;
  for (let pl = 0; pl < planes; pl++) {
    const base = pl * plane;
    for (let oy = 0; oy < outHeight; oy++) {
      const top = base + oy * size * width;
      for (let ox = 0; ox < outWidth; ox++) {
        let best = top + ox * size;
        let max = x[best]!;
        for (let ky = 0; ky < size; ky++) {
          const row = top + ky * width + ox * size;
          for (let kx = 0; kx < size; kx++) {
            const v = x[row + kx]!;
            if (v > max) {
              max = v;
              best = row + kx;
            }
          }
        }
        y[out] = max;
        argmax[out] = best;
        out++;
      }
    }
  }
}

/**
 * dx = each of the first `outputs` entries of dy added at its `argmax` index, zero elsewhere; the
 * first `inputs` entries of `dx` are overwritten.
 */
export function maxPoolBackwardInto(
  dy: Float32Array,
  argmax: Uint32Array,
  dx: Float32Array,
  outputs: number,
  inputs: number,
): void {
  dx.fill(0, 0, inputs);
  for (let i = 0; i < outputs; i++) {
    const at = argmax[i]!;
    dx[at] = dx[at]! + dy[i]!;
  }
}
