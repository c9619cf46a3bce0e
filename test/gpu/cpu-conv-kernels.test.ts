import { describe, expect, it } from 'vitest';
import {
  conv2dBackwardInto,
  conv2dForwardInto,
  conv2dGeometry,
  cpuKernels,
  createConv2dScratch,
} from '../../gpu/cpu/index.ts';
import type { Conv2dShape, PoolShape } from '../../gpu/index.ts';

const f32 = (values: number[]): Float32Array => Float32Array.from(values);

/** Deterministic pseudo-random numbers in [0, 1) (LCG), so fixtures never change. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Float64 reference convolution, straight from the definition (NCHW, zero padding, stride 1). */
function referenceConv(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  b: ArrayLike<number>,
  s: Conv2dShape,
): Float64Array {
  const pad = s.padding === 'same' ? (s.kernel - 1) / 2 : 0;
  const oh = s.height + 2 * pad - s.kernel + 1;
  const ow = s.width + 2 * pad - s.kernel + 1;
  const y = new Float64Array(s.batch * s.filters * oh * ow);
  for (let n = 0; n < s.batch; n++) {
    for (let f = 0; f < s.filters; f++) {
      for (let oy = 0; oy < oh; oy++) {
        for (let ox = 0; ox < ow; ox++) {
          let sum = b[f]!;
          for (let c = 0; c < s.channels; c++) {
            for (let ki = 0; ki < s.kernel; ki++) {
              for (let kj = 0; kj < s.kernel; kj++) {
                const iy = oy + ki - pad;
                const ix = ox + kj - pad;
                if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
                sum +=
                  x[((n * s.channels + c) * s.height + iy) * s.width + ix]! *
                  w[((f * s.channels + c) * s.kernel + ki) * s.kernel + kj]!;
              }
            }
          }
          y[((n * s.filters + f) * oh + oy) * ow + ox] = sum;
        }
      }
    }
  }
  return y;
}

/** Float64 reference max-pooling. */
function referencePool(x: ArrayLike<number>, s: PoolShape): Float64Array {
  const oh = Math.floor(s.height / s.size);
  const ow = Math.floor(s.width / s.size);
  const y = new Float64Array(s.batch * s.channels * oh * ow);
  let out = 0;
  for (let plane = 0; plane < s.batch * s.channels; plane++) {
    for (let oy = 0; oy < oh; oy++) {
      for (let ox = 0; ox < ow; ox++) {
        let max = Number.NEGATIVE_INFINITY;
        for (let ky = 0; ky < s.size; ky++) {
          for (let kx = 0; kx < s.size; kx++) {
            max = Math.max(max, x[(plane * s.height + oy * s.size + ky) * s.width + ox * s.size + kx]!);
          }
        }
        y[out++] = max;
      }
    }
  }
  return y;
}

/**
 * Worst relative error between `analytic` and the central difference of `loss` with respect to
 * each entry of `p` (a float64 copy that `loss` reads).
 */
function worstGradientError(
  p: Float64Array,
  analytic: ArrayLike<number>,
  loss: () => number,
  h = 1e-5,
): number {
  let worst = 0;
  for (let k = 0; k < p.length; k++) {
    const saved = p[k]!;
    p[k] = saved + h;
    const up = loss();
    p[k] = saved - h;
    const down = loss();
    p[k] = saved;
    const numeric = (up - down) / (2 * h);
    const a = analytic[k]!;
    worst = Math.max(worst, Math.abs(a - numeric) / Math.max(Math.abs(a) + Math.abs(numeric), 1e-3));
  }
  return worst;
}

function random(n: number, next: () => number, zeroFraction = 0): Float32Array {
  return new Float32Array(n).map(() => (next() < zeroFraction ? 0 : next() * 2 - 1));
}

// 1×1×3×3 input [[1, 2, 3], [4, 5, 6], [7, 8, 9]].
const X3 = f32([1, 2, 3, 4, 5, 6, 7, 8, 9]);

describe('conv2dForward', () => {
  it("a 2×2 kernel with 'valid' padding by hand", async () => {
    // W = [[1, 2], [3, 4]], b = 0.5: y[0][0] = 1·1 + 2·2 + 3·4 + 4·5 + 0.5 = 37.5, and so on.
    const shape: Conv2dShape = {
      batch: 1,
      channels: 1,
      height: 3,
      width: 3,
      filters: 1,
      kernel: 2,
      padding: 'valid',
    };
    const y = await cpuKernels.conv2dForward(X3, f32([1, 2, 3, 4]), f32([0.5]), shape);
    expect(Array.from(y)).toEqual([37.5, 47.5, 67.5, 77.5]);
  });

  it("a 3×3 box kernel with 'same' padding sums each zero-padded neighbourhood", async () => {
    const shape: Conv2dShape = {
      batch: 1,
      channels: 1,
      height: 3,
      width: 3,
      filters: 1,
      kernel: 3,
      padding: 'same',
    };
    const y = await cpuKernels.conv2dForward(X3, new Float32Array(9).fill(1), f32([0]), shape);
    // Corner (0, 0): 1 + 2 + 4 + 5; edge (0, 1): 1 + 2 + 3 + 4 + 5 + 6; centre: 45.
    expect(Array.from(y)).toEqual([12, 21, 16, 27, 45, 33, 24, 39, 28]);
  });

  it('two channels and two filters by hand: filters read their own [channels][k][k] block', async () => {
    // x channel 0 = X3, channel 1 = −X3; 1×1 kernels: filter 0 = [1, 0] (copies channel 0),
    // filter 1 = [1, 1] (channel 0 + channel 1 = 0), biases [0, 2].
    const x = f32([...X3, ...X3.map((v) => -v)]);
    const shape: Conv2dShape = {
      batch: 1,
      channels: 2,
      height: 3,
      width: 3,
      filters: 2,
      kernel: 1,
      padding: 'valid',
    };
    const y = await cpuKernels.conv2dForward(x, f32([1, 0, 1, 1]), f32([0, 2]), shape);
    expect(Array.from(y)).toEqual([...X3, ...new Array(9).fill(2)]);
  });

  for (const padding of ['same', 'valid'] as const) {
    for (const zeroFraction of [0, 0.8]) {
      it(`matches the float64 reference (${padding}, ${zeroFraction === 0 ? 'dense' : 'sparse'} input)`, async () => {
        const next = rng(padding === 'same' ? 5 + zeroFraction : 9 + zeroFraction);
        const shape: Conv2dShape = {
          batch: 3,
          channels: 3,
          height: 7,
          width: 6,
          filters: 5,
          kernel: 3,
          padding,
        };
        const x = random(3 * 3 * 7 * 6, next, zeroFraction);
        const w = random(5 * 3 * 9, next);
        const b = random(5, next);
        const y = await cpuKernels.conv2dForward(x, w, b, shape);
        const ref = referenceConv(x, w, b, shape);
        expect(y.length).toBe(ref.length);
        for (let i = 0; i < ref.length; i++) expect(y[i]).toBeCloseTo(ref[i]!, 5);
      });
    }
  }

  it('gives the same answer when the batch is split into chunks', () => {
    const next = rng(21);
    const g = conv2dGeometry(2, 5, 5, 3, 3, 'same');
    const batch = 5;
    const x = random(batch * 2 * 25, next, 0.3);
    const w = random(3 * 2 * 9, next);
    const b = random(3, next);
    const whole = createConv2dScratch(g, batch, true);
    const chunked = createConv2dScratch(g, batch, true, 2 * 25 * 18); // two samples per chunk
    expect(whole.chunk).toBe(batch);
    expect(chunked.chunk).toBe(2);
    const y1 = new Float32Array(batch * 3 * 25);
    const y2 = new Float32Array(batch * 3 * 25);
    conv2dForwardInto(x, w, 0, b, 0, y1, batch, whole);
    conv2dForwardInto(x, w, 0, b, 0, y2, batch, chunked);
    expect(y2).toEqual(y1);
    const dy = random(batch * 3 * 25, next, 0.5);
    const grads = [whole, chunked].map((scratch) => {
      const dx = new Float32Array(x.length).fill(7);
      const dw = new Float32Array(w.length).fill(7);
      const db = new Float32Array(3).fill(7);
      conv2dBackwardInto(x, w, 0, dy, dx, dw, 0, db, 0, batch, scratch);
      return { dx, dw, db };
    });
    expect(grads[1]!.dx).toEqual(grads[0]!.dx);
    for (let i = 0; i < w.length; i++) expect(grads[1]!.dw[i]).toBeCloseTo(grads[0]!.dw[i]!, 5);
    for (let i = 0; i < 3; i++) expect(grads[1]!.db[i]).toBeCloseTo(grads[0]!.db[i]!, 5);
  });

  it('rejects bad shapes and lengths, naming the field', async () => {
    const shape: Conv2dShape = {
      batch: 1,
      channels: 1,
      height: 3,
      width: 3,
      filters: 1,
      kernel: 2,
      padding: 'valid',
    };
    const w = f32([1, 2, 3, 4]);
    const b = f32([0]);
    await expect(cpuKernels.conv2dForward(X3, w, b, { ...shape, padding: 'same' })).rejects.toThrow(
      /shape\.kernel must be odd for 'same' padding, got 2/,
    );
    await expect(cpuKernels.conv2dForward(X3, w, b, { ...shape, kernel: 4 })).rejects.toThrow(
      /shape\.kernel 4 is larger than the 3×3 input/,
    );
    await expect(cpuKernels.conv2dForward(X3, w, b, { ...shape, filters: 0 })).rejects.toThrow(
      /shape\.filters must be an integer/,
    );
    await expect(
      cpuKernels.conv2dForward(X3, w, b, { ...shape, padding: 'full' as unknown as 'same' }),
    ).rejects.toThrow(/shape\.padding must be 'same' or 'valid', got full/);
    await expect(cpuKernels.conv2dForward(X3.subarray(1), w, b, shape)).rejects.toThrow(
      /x length 8, batch 1 × channels 1 × height 3 × width 3 expects 9/,
    );
    await expect(cpuKernels.conv2dForward(X3, f32([1, 2, 3]), b, shape)).rejects.toThrow(/w length 3/);
    await expect(cpuKernels.conv2dForward(X3, w, f32([0, 0]), shape)).rejects.toThrow(/b length 2/);
    await expect(cpuKernels.conv2dForward(X3, f32([1, Number.NaN, 3, 4]), b, shape)).rejects.toThrow(
      /w\[1\] is NaN/,
    );
    await expect(cpuKernels.conv2dForward(X3, w, b, null as unknown as Conv2dShape)).rejects.toThrow(
      /shape must be a Conv2dShape object/,
    );
  });
});

describe('conv2dBackward', () => {
  it("a 2×2 'valid' kernel by hand", async () => {
    // dy = 1 at output (0, 0) only: dW is the top-left patch, db = 1, dx is W placed top-left.
    const shape: Conv2dShape = {
      batch: 1,
      channels: 1,
      height: 3,
      width: 3,
      filters: 1,
      kernel: 2,
      padding: 'valid',
    };
    const { dx, dw, db } = await cpuKernels.conv2dBackward(X3, f32([1, 2, 3, 4]), f32([1, 0, 0, 0]), shape);
    expect(Array.from(dw)).toEqual([1, 2, 4, 5]);
    expect(Array.from(db)).toEqual([1]);
    expect(Array.from(dx)).toEqual([1, 2, 0, 3, 4, 0, 0, 0, 0]);
    // dy = 1 everywhere: each weight sees the sum of the 2×2 block it slides over, db = 4.
    const all = await cpuKernels.conv2dBackward(X3, f32([1, 2, 3, 4]), f32([1, 1, 1, 1]), shape);
    expect(Array.from(all.dw)).toEqual([12, 16, 24, 28]);
    expect(Array.from(all.db)).toEqual([4]);
    expect(Array.from(all.dx)).toEqual([1, 3, 2, 4, 10, 6, 3, 7, 4]);
  });

  for (const padding of ['same', 'valid'] as const) {
    it(`matches float64 central differences of a non-linear loss (${padding})`, async () => {
      // L = Σ r ⊙ tanh(conv(x, W) + b), so dy = r ⊙ (1 − tanh²).
      const next = rng(padding === 'same' ? 31 : 37);
      const shape: Conv2dShape = {
        batch: 2,
        channels: 2,
        height: 5,
        width: 4,
        filters: 3,
        kernel: 3,
        padding,
      };
      const x = random(2 * 2 * 5 * 4, next, 0.3);
      const w = random(3 * 2 * 9, next);
      const b = random(3, next);
      const y = referenceConv(x, w, b, shape);
      const r = Float64Array.from(y, () => next() * 2 - 1);
      const dy = Float32Array.from(y, (v, i) => r[i]! * (1 - Math.tanh(v) ** 2));
      const { dx, dw, db } = await cpuKernels.conv2dBackward(x, w, dy, shape);
      const px = Float64Array.from(x);
      const pw = Float64Array.from(w);
      const pb = Float64Array.from(b);
      const loss = (): number =>
        referenceConv(px, pw, pb, shape).reduce((s, v, i) => s + r[i]! * Math.tanh(v), 0);
      expect(worstGradientError(px, dx, loss)).toBeLessThan(1e-4);
      expect(worstGradientError(pw, dw, loss)).toBeLessThan(1e-4);
      expect(worstGradientError(pb, db, loss)).toBeLessThan(1e-4);
    });
  }

  it('rejects a dy of the wrong length', async () => {
    const shape: Conv2dShape = {
      batch: 1,
      channels: 1,
      height: 3,
      width: 3,
      filters: 1,
      kernel: 2,
      padding: 'valid',
    };
    await expect(cpuKernels.conv2dBackward(X3, f32([1, 2, 3, 4]), f32([1, 2, 3]), shape)).rejects.toThrow(
      /dy length 3, batch 1 × filters 1 × 2 × 2 expects 4/,
    );
  });
});

describe('maxPoolForward', () => {
  it('2×2 windows by hand, the first maximum on ties, a trailing row and column dropped', async () => {
    // 5×5 input; the windows cover rows/columns 0–3, row 4 and column 4 are dropped (floor).
    const x = f32([
      1,
      3,
      2,
      2,
      99, //
      3,
      0,
      2,
      2,
      99,
      -1,
      -2,
      5,
      4,
      99,
      -3,
      -4,
      4,
      5,
      99,
      99,
      99,
      99,
      99,
      99,
    ]);
    const shape: PoolShape = { batch: 1, channels: 1, height: 5, width: 5, size: 2 };
    const { y, argmax } = await cpuKernels.maxPoolForward(x, shape);
    expect(Array.from(y)).toEqual([3, 2, -1, 5]);
    // Window 0: 3 at index 1 and at index 5 → the first (1). Window 1: all 2 → its first (2).
    // Window 3: 5 at 12 and 18 → 12.
    expect(Array.from(argmax)).toEqual([1, 2, 10, 12]);
  });

  it('indexes into the whole batch: argmax is flat over [batch][channels][height][width]', async () => {
    const x = f32([0, 1, 2, 3, 7, 6, 5, 4]); // 2 samples × 1 channel × 2 × 2
    const { y, argmax } = await cpuKernels.maxPoolForward(x, {
      batch: 2,
      channels: 1,
      height: 2,
      width: 2,
      size: 2,
    });
    expect(Array.from(y)).toEqual([3, 7]);
    expect(Array.from(argmax)).toEqual([3, 4]);
  });

  it('matches the reference on random input', async () => {
    const next = rng(41);
    const shape: PoolShape = { batch: 2, channels: 3, height: 7, width: 6, size: 3 };
    const x = random(2 * 3 * 7 * 6, next);
    const { y } = await cpuKernels.maxPoolForward(x, shape);
    expect(Array.from(y)).toEqual(Array.from(referencePool(x, shape)));
  });

  it('rejects bad shapes, naming the field', async () => {
    const x = new Float32Array(9);
    await expect(
      cpuKernels.maxPoolForward(x, { batch: 1, channels: 1, height: 3, width: 3, size: 4 }),
    ).rejects.toThrow(/shape\.size 4 is larger than the 3×3 input/);
    await expect(
      cpuKernels.maxPoolForward(x, { batch: 1, channels: 1, height: 3, width: 3, size: 0 }),
    ).rejects.toThrow(/shape\.size must be an integer/);
    await expect(
      cpuKernels.maxPoolForward(x, { batch: 2, channels: 1, height: 3, width: 3, size: 2 }),
    ).rejects.toThrow(/x length 9, batch 2 × channels 1 × height 3 × width 3 expects 18/);
  });
});

describe('maxPoolBackward', () => {
  it('routes each dy to its argmax, zero elsewhere', async () => {
    const shape: PoolShape = { batch: 1, channels: 1, height: 2, width: 4, size: 2 };
    const dx = await cpuKernels.maxPoolBackward(f32([5, -2]), Uint32Array.of(4, 3), shape);
    expect(Array.from(dx)).toEqual([0, 0, 0, -2, 5, 0, 0, 0]);
  });

  it('matches float64 central differences of a non-linear loss', async () => {
    // L = Σ r ⊙ maxpool(x)²: dy = 2·r·y. Distinct inputs so no tie flips under ±h.
    const next = rng(43);
    const shape: PoolShape = { batch: 2, channels: 2, height: 5, width: 4, size: 2 };
    const n = 2 * 2 * 5 * 4;
    const x = Float32Array.from({ length: n }, (_, i) => ((i * 7919) % n) / n - 0.5 + next() * 1e-3);
    const { y, argmax } = await cpuKernels.maxPoolForward(x, shape);
    const r = Float64Array.from(y, () => next() * 2 - 1);
    const dy = Float32Array.from(y, (v, i) => 2 * r[i]! * v);
    const dx = await cpuKernels.maxPoolBackward(dy, argmax, shape);
    const px = Float64Array.from(x);
    const loss = (): number => referencePool(px, shape).reduce((s, v, i) => s + r[i]! * v * v, 0);
    expect(worstGradientError(px, dx, loss, 1e-6)).toBeLessThan(1e-4);
  });

  it('rejects an argmax outside its window or of the wrong length', async () => {
    const shape: PoolShape = { batch: 1, channels: 1, height: 2, width: 4, size: 2 };
    await expect(cpuKernels.maxPoolBackward(f32([1, 1]), Uint32Array.of(4, 1), shape)).rejects.toThrow(
      /argmax\[1\] is 1, outside the window of output 1/,
    );
    await expect(cpuKernels.maxPoolBackward(f32([1, 1]), Uint32Array.of(4), shape)).rejects.toThrow(
      /argmax must be a Uint32Array of length 2/,
    );
    await expect(cpuKernels.maxPoolBackward(f32([1]), Uint32Array.of(4, 3), shape)).rejects.toThrow(
      /dy length 1/,
    );
  });
});
