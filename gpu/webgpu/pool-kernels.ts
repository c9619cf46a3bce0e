import type { PoolShape } from '../engine/index.ts';
import { poolGeometry } from './conv-geometry.ts';
import { type Dispatch, elementwiseGrid, type GpuContext, type UniformField } from './gpu-context.ts';

const WORKGROUP = 64;

const POOL_PARAMS = /* wgsl */ `
struct Params { n: u32, stride: u32, H: u32, W: u32, OH: u32, OW: u32, size: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
`;

/**
 * Max-pooling forward, one invocation per output y[b][c][py][px]: the maximum of the size × size
 * window at (py·size, px·size), scanned row-major, a later value winning only when strictly
 * greater (ties go to the first); Argmax gets the flat index into X of the value chosen.
 */
export const MAX_POOL_FORWARD_WGSL = /* wgsl */ `${POOL_PARAMS}
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<storage, read_write> Argmax: array<u32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  let px = i % p.OW;
  var t = i / p.OW;
  let py = t % p.OH;
  let plane = t / p.OH;
  let first = (plane * p.H + py * p.size) * p.W + px * p.size;
  var best = X[first];
  var arg = first;
  for (var dy = 0u; dy < p.size; dy++) {
    let row = first + dy * p.W;
    for (var dx = 0u; dx < p.size; dx++) {
      let v = X[row + dx];
      if (v > best) {
        best = v;
        arg = row + dx;
      }
    }
  }
  Y[i] = best;
  Argmax[i] = arg;
}
`;

/**
 * Max-pooling backward, one invocation per dx[b][c][iy][ix]: dy of the window containing it when
 * that window's argmax is this element, else 0 (windows do not overlap, so each element receives
 * at most one dy; the rows and columns past the last window get 0). Needs argmax from
 * {@link MAX_POOL_FORWARD_WGSL} (every index inside its own window).
 */
export const MAX_POOL_BACKWARD_WGSL = /* wgsl */ `${POOL_PARAMS}
@group(0) @binding(1) var<storage, read> Dy: array<f32>;
@group(0) @binding(2) var<storage, read> Argmax: array<u32>;
@group(0) @binding(3) var<storage, read_write> Dx: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  let ix = i % p.W;
  var t = i / p.W;
  let iy = t % p.H;
  let plane = t / p.H;
  let py = iy / p.size;
  let px = ix / p.size;
  var g = 0.0;
  if (py < p.OH && px < p.OW) {
    let o = (plane * p.OH + py) * p.OW + px;
    if (Argmax[o] == i) { g = Dy[o]; }
  }
  Dx[i] = g;
}
`;

function poolFields(shape: PoolShape, n: number, stride: number): UniformField[] {
  const g = poolGeometry(shape);
  return [
    ['u32', n],
    ['u32', stride],
    ['u32', shape.height],
    ['u32', shape.width],
    ['u32', g.outHeight],
    ['u32', g.outWidth],
    ['u32', shape.size],
    ['u32', 0],
  ];
}

/** y[batch][channels][⌊H/size⌋][⌊W/size⌋] and its argmax (u32 flat indices into x). */
export function maxPoolForwardDispatch(
  ctx: GpuContext,
  b: { x: GPUBuffer; y: GPUBuffer; argmax: GPUBuffer },
  shape: PoolShape,
): Dispatch {
  const g = poolGeometry(shape);
  const n = shape.batch * shape.channels * g.outHeight * g.outWidth;
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(poolFields(shape, n, stride), 'max-pool-forward');
  return ctx.dispatch('max-pool-forward', MAX_POOL_FORWARD_WGSL, [uniform, b.x, b.y, b.argmax], groups);
}

/** dx[batch][channels][H][W]: each dy at its argmax, 0 elsewhere. */
export function maxPoolBackwardDispatch(
  ctx: GpuContext,
  b: { dy: GPUBuffer; argmax: GPUBuffer; dx: GPUBuffer },
  shape: PoolShape,
): Dispatch {
  const n = shape.batch * shape.channels * shape.height * shape.width;
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(poolFields(shape, n, stride), 'max-pool-backward');
  return ctx.dispatch('max-pool-backward', MAX_POOL_BACKWARD_WGSL, [uniform, b.dy, b.argmax, b.dx], groups);
}
