import { type Dispatch, elementwiseGrid, type GpuContext } from './gpu-context.ts';

const WORKGROUP = 256;

/** out[i] = max(x[i], 0). */
export const RELU_WGSL = /* wgsl */ `
struct Params { n: u32, stride: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  Out[i] = max(X[i], 0.0);
}
`;

/** dx[i] = dy[i] where the pre-activation x[i] > 0, else 0. */
export const RELU_BACKWARD_WGSL = /* wgsl */ `
struct Params { n: u32, stride: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> Dx: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  Dx[i] = select(0.0, Dy[i], X[i] > 0.0);
}
`;

/** ReLU over the first `n` floats of `x` into `out`. */
export function reluDispatch(ctx: GpuContext, x: GPUBuffer, out: GPUBuffer, n: number): Dispatch {
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(
    [
      ['u32', n],
      ['u32', stride],
    ],
    'relu',
  );
  return ctx.dispatch('relu', RELU_WGSL, [uniform, x, out], groups);
}

/** ReLU backward over the first `n` floats: dx = dy · [x > 0]. */
export function reluBackwardDispatch(
  ctx: GpuContext,
  x: GPUBuffer,
  dy: GPUBuffer,
  dx: GPUBuffer,
  n: number,
): Dispatch {
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(
    [
      ['u32', n],
      ['u32', stride],
    ],
    'relu-backward',
  );
  return ctx.dispatch('relu-backward', RELU_BACKWARD_WGSL, [uniform, x, dy, dx], groups);
}
