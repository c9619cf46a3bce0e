import { type Dispatch, elementwiseGrid, type GpuContext } from './gpu-context.ts';

const WORKGROUP = 256;

/**
 * SGD with momentum and the FedProx term, element-wise, in this f32 order:
 * g = grad + μ·(w − anchor); v = β·v + g; w = w − η·v.
 */
export const SGD_WGSL = /* wgsl */ `
struct Params { n: u32, stride: u32, lr: f32, beta: f32, mu: f32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> W: array<f32>;
@group(0) @binding(2) var<storage, read_write> V: array<f32>;
@group(0) @binding(3) var<storage, read> Grad: array<f32>;
@group(0) @binding(4) var<storage, read> Anchor: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  let w = W[i];
  let g = Grad[i] + p.mu * (w - Anchor[i]);
  let v = p.beta * V[i] + g;
  V[i] = v;
  W[i] = w - p.lr * v;
}
`;

/** One optimizer step over the first `n` parameters, in place on `w` and `velocity`. */
export function sgdDispatch(
  ctx: GpuContext,
  b: { w: GPUBuffer; velocity: GPUBuffer; grad: GPUBuffer; anchor: GPUBuffer },
  n: number,
  hyper: { learningRate: number; momentum: number; mu: number },
): Dispatch {
  const { groups, stride } = elementwiseGrid(n, WORKGROUP);
  const uniform = ctx.uniform(
    [
      ['u32', n],
      ['u32', stride],
      ['f32', hyper.learningRate],
      ['f32', hyper.momentum],
      ['f32', hyper.mu],
    ],
    'sgd',
  );
  return ctx.dispatch('sgd', SGD_WGSL, [uniform, b.w, b.velocity, b.grad, b.anchor], groups);
}
