import type { Conv2dShape } from '../engine/index.ts';
import { convGeometry } from './conv-geometry.ts';
import { type Dispatch, elementwiseGrid, type GpuContext, type UniformField } from './gpu-context.ts';

const WORKGROUP = 64;

/** The uniform struct shared by the convolution kernels (12 × 4 bytes). */
const CONV_PARAMS = /* wgsl */ `
struct Params {
  n: u32, stride: u32, C: u32, H: u32,
  W: u32, F: u32, K: u32, pad: u32,
  OH: u32, OW: u32, wOff: u32, bOff: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
`;

/** Filters one forward invocation computes (sharing its input loads): the lanes of a vec4. */
const FORWARD_FILTER_BLOCK = 4;

/**
 * Direct convolution forward, one invocation per output position (b, oy, ox) and block of
 * {@link FORWARD_FILTER_BLOCK} filters f0 … f0+3 (NCHW):
 * y[b][f][oy][ox] = Σ_c Σ_ky Σ_kx x[b][c][oy+ky−pad][ox+kx−pad] · w[f][c][ky][kx] + bias[f],
 * summed c, ky, kx ascending in one f32 accumulator per filter over the taps that land inside the
 * input (zero padding), the bias added last. Each input value is loaded once for the block's
 * filters (lanes past the last filter read the last filter's weights and are not written). W and
 * the bias are read from the parameter buffer at `wOff` and `bOff`.
 */
export const CONV2D_FORWARD_WGSL = /* wgsl */ `${CONV_PARAMS}
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> P: array<f32>;
@group(0) @binding(3) var<storage, read_write> Y: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  let ox = i % p.OW;
  var t = i / p.OW;
  let oy = t % p.OH;
  t = t / p.OH;
  let blocks = (p.F + 3u) / 4u;
  let f0 = (t % blocks) * 4u;
  let b = t / blocks;
  let last = p.F - 1u;
  let kk = p.K * p.K;
  let filterStride = p.C * kk;
  let w0 = p.wOff + min(f0, last) * filterStride;
  let w1 = p.wOff + min(f0 + 1u, last) * filterStride;
  let w2 = p.wOff + min(f0 + 2u, last) * filterStride;
  let w3 = p.wOff + min(f0 + 3u, last) * filterStride;
  // Taps with 0 ≤ oy + ky − pad < H (and the same for x).
  let K = i32(p.K);
  let kyLo = u32(max(0, i32(p.pad) - i32(oy)));
  let kyHi = u32(min(K, i32(p.H) + i32(p.pad) - i32(oy)));
  let kxLo = u32(max(0, i32(p.pad) - i32(ox)));
  let kxHi = u32(min(K, i32(p.W) + i32(p.pad) - i32(ox)));
  var acc = vec4f(0.0);
  for (var c = 0u; c < p.C; c++) {
    let xPlane = (b * p.C + c) * p.H;
    let cOff = c * kk;
    for (var ky = kyLo; ky < kyHi; ky++) {
      let xRow = (xPlane + oy + ky - p.pad) * p.W + ox - p.pad;
      let wRow = cOff + ky * p.K;
      for (var kx = kxLo; kx < kxHi; kx++) {
        let o = wRow + kx;
        acc = acc + X[xRow + kx] * vec4f(P[w0 + o], P[w1 + o], P[w2 + o], P[w3 + o]);
      }
    }
  }
  let plane = p.OH * p.OW;
  let out = ((b * p.F + f0) * p.OH + oy) * p.OW + ox;
  for (var j = 0u; j < 4u && f0 + j < p.F; j++) {
    Y[out + j * plane] = acc[j] + P[p.bOff + f0 + j];
  }
}
`;

/**
 * Convolution input gradient, one invocation per input position (b, iy, ix) and block of 4
 * channels c0 … c0+3: dx[b][c][iy][ix] = Σ_f Σ_ky Σ_kx dy[b][f][iy+pad−ky][ix+pad−kx] · w[f][c][ky][kx]
 * over the output positions that exist, summed f, ky, kx ascending in one f32 accumulator per
 * channel (a transposed convolution; no atomics, no zero-fill). Each dy value is loaded once for
 * the block's channels (lanes past the last channel read its weights and are not written).
 */
export const CONV2D_INPUT_GRAD_WGSL = /* wgsl */ `${CONV_PARAMS}
@group(0) @binding(1) var<storage, read> Dy: array<f32>;
@group(0) @binding(2) var<storage, read> P: array<f32>;
@group(0) @binding(3) var<storage, read_write> Dx: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  let ix = i % p.W;
  var t = i / p.W;
  let iy = t % p.H;
  t = t / p.H;
  let blocks = (p.C + 3u) / 4u;
  let c0 = (t % blocks) * 4u;
  let b = t / blocks;
  let last = p.C - 1u;
  let kk = p.K * p.K;
  let c1 = min(c0 + 1u, last) * kk;
  let c2 = min(c0 + 2u, last) * kk;
  let c3 = min(c0 + 3u, last) * kk;
  // Taps with 0 ≤ iy + pad − ky < OH, i.e. iy + pad + 1 − OH ≤ ky ≤ iy + pad (and the same for x).
  let K = i32(p.K);
  let kyLo = u32(max(0, i32(iy + p.pad + 1u) - i32(p.OH)));
  let kyHi = u32(min(K, i32(iy + p.pad + 1u)));
  let kxLo = u32(max(0, i32(ix + p.pad + 1u) - i32(p.OW)));
  let kxHi = u32(min(K, i32(ix + p.pad + 1u)));
  var acc = vec4f(0.0);
  for (var f = 0u; f < p.F; f++) {
    let dyPlane = (b * p.F + f) * p.OH;
    let wBase = p.wOff + f * p.C * kk;
    let w0 = wBase + c0 * kk;
    for (var ky = kyLo; ky < kyHi; ky++) {
      let dyRow = (dyPlane + iy + p.pad - ky) * p.OW + ix + p.pad;
      let kOff = ky * p.K;
      for (var kx = kxLo; kx < kxHi; kx++) {
        let o = kOff + kx;
        acc = acc + Dy[dyRow - kx] * vec4f(P[w0 + o], P[wBase + c1 + o], P[wBase + c2 + o], P[wBase + c3 + o]);
      }
    }
  }
  let plane = p.H * p.W;
  let out = ((b * p.C + c0) * p.H + iy) * p.W + ix;
  for (var j = 0u; j < 4u && c0 + j < p.C; j++) {
    Dx[out + j * plane] = acc[j];
  }
}
`;

/** Where a convolution's weights and bias live inside the parameter buffer (in floats). */
export interface ConvParameterOffsets {
  readonly weightOffset: number;
  readonly biasOffset: number;
}

function convFields(shape: Conv2dShape, n: number, stride: number, at: ConvParameterOffsets): UniformField[] {
  const g = convGeometry(shape);
  return [
    ['u32', n],
    ['u32', stride],
    ['u32', shape.channels],
    ['u32', shape.height],
    ['u32', shape.width],
    ['u32', shape.filters],
    ['u32', shape.kernel],
    ['u32', g.pad],
    ['u32', g.outHeight],
    ['u32', g.outWidth],
    ['u32', at.weightOffset],
    ['u32', at.biasOffset],
  ];
}

/** y[batch][filters][outHeight][outWidth] = conv2d(x, W) + b, W and b inside `params`. */
export function conv2dForwardDispatch(
  ctx: GpuContext,
  x: GPUBuffer,
  params: GPUBuffer,
  y: GPUBuffer,
  shape: Conv2dShape,
  at: ConvParameterOffsets,
): Dispatch {
  const g = convGeometry(shape);
  const blocks = Math.ceil(shape.filters / FORWARD_FILTER_BLOCK);
  const n = shape.batch * blocks * g.outHeight * g.outWidth;
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(convFields(shape, n, stride, at), 'conv2d-forward');
  return ctx.dispatch('conv2d-forward', CONV2D_FORWARD_WGSL, [uniform, x, params, y], groups);
}

/** dx[batch][channels][height][width] = ∂L/∂x from dy and W (inside `params`). */
export function conv2dInputGradDispatch(
  ctx: GpuContext,
  dy: GPUBuffer,
  params: GPUBuffer,
  dx: GPUBuffer,
  shape: Conv2dShape,
  at: ConvParameterOffsets,
): Dispatch {
  const n = shape.batch * Math.ceil(shape.channels / 4) * shape.height * shape.width;
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(convFields(shape, n, stride, at), 'conv2d-input-grad');
  return ctx.dispatch('conv2d-input-grad', CONV2D_INPUT_GRAD_WGSL, [uniform, dy, params, dx], groups);
}
