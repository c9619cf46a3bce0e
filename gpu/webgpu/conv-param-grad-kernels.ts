import type { Conv2dShape } from '../engine/index.ts';
import { convGeometry } from './conv-geometry.ts';
import type { ConvParameterOffsets } from './conv-kernels.ts';
import { type Dispatch, elementwiseGrid, type GpuContext } from './gpu-context.ts';

const WORKGROUP = 64;
/** Invocations the partial-sum pass aims for (enough to fill a large GPU). */
const TARGET_INVOCATIONS = 1 << 18;
/** Fewest output rows one partial sum covers, so the partials stay few next to the work. */
const MIN_ROWS_PER_PART = 2;
/** Most floats of partial sums one layer may keep (16 MiB). */
const MAX_PARTIAL_FLOATS = 1 << 22;

/**
 * Partial sums of a convolution's weight and bias gradients. The reduction over batch × outHeight
 * × outWidth positions is split into `parts` contiguous ranges of output rows (b, oy). Invocation
 * (part, j) sums its range: for j < ⌈F/4⌉·C·K·K the weight gradients of 4 filters f0 … f0+3 at one
 * (c, ky, kx), dw[f][c][ky][kx] = Σ dy[b][f][oy][ox] · x[b][c][oy+ky−pad][ox+kx−pad] (each x value
 * loaded once for the 4), else one bias gradient db[f] = Σ dy[b][f][oy][ox]; rows ascending then
 * ox ascending in one f32 accumulator per entry, into Partial[part·(F·C·K·K + F) + entry] (weights
 * [f][c][ky][kx], then biases). No atomics, no barriers.
 */
export const CONV2D_PARAM_GRAD_PARTIAL_WGSL = /* wgsl */ `
struct Params {
  n: u32, stride: u32, C: u32, H: u32,
  W: u32, F: u32, K: u32, pad: u32,
  OH: u32, OW: u32, outs: u32, rowsPerPart: u32,
  rows: u32, jobs: u32, p1: u32, p2: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> Dy: array<f32>;
@group(0) @binding(3) var<storage, read_write> Partial: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  let j = i % p.jobs;
  let part = i / p.jobs;
  let rowLo = part * p.rowsPerPart;
  let rowHi = min(p.rows, rowLo + p.rowsPerPart);
  let kk = p.K * p.K;
  let weights = p.F * p.C * kk;
  let blockJobs = ((p.F + 3u) / 4u) * p.C * kk;
  let base = part * p.outs;
  if (j >= blockJobs) {
    let f = j - blockJobs;
    var acc = 0.0;
    for (var row = rowLo; row < rowHi; row++) {
      let b = row / p.OH;
      let oy = row % p.OH;
      let dyRow = ((b * p.F + f) * p.OH + oy) * p.OW;
      for (var ox = 0u; ox < p.OW; ox++) {
        acc = acc + Dy[dyRow + ox];
      }
    }
    Partial[base + weights + f] = acc;
    return;
  }
  let kx = j % p.K;
  var t = j / p.K;
  let ky = t % p.K;
  t = t / p.K;
  let c = t % p.C;
  let f0 = (t / p.C) * 4u;
  let last = p.F - 1u;
  let plane = p.OH * p.OW;
  let d1 = min(f0 + 1u, last) - f0;
  let d2 = min(f0 + 2u, last) - f0;
  let d3 = min(f0 + 3u, last) - f0;
  // Output positions whose tap (ky, kx) lands inside the input (none when the kernel overhangs).
  let oyLo = u32(max(0, i32(p.pad) - i32(ky)));
  let oyHi = u32(max(0, min(i32(p.OH), i32(p.H) + i32(p.pad) - i32(ky))));
  let oxLo = u32(max(0, i32(p.pad) - i32(kx)));
  let oxHi = u32(max(0, min(i32(p.OW), i32(p.W) + i32(p.pad) - i32(kx))));
  var acc = vec4f(0.0);
  for (var row = rowLo; row < rowHi; row++) {
    let b = row / p.OH;
    let oy = row % p.OH;
    if (oy < oyLo || oy >= oyHi) { continue; }
    let dyRow = ((b * p.F + f0) * p.OH + oy) * p.OW;
    let r1 = dyRow + d1 * plane;
    let r2 = dyRow + d2 * plane;
    let r3 = dyRow + d3 * plane;
    let xRow = ((b * p.C + c) * p.H + oy + ky - p.pad) * p.W + kx - p.pad;
    for (var ox = oxLo; ox < oxHi; ox++) {
      acc = acc + X[xRow + ox] * vec4f(Dy[dyRow + ox], Dy[r1 + ox], Dy[r2 + ox], Dy[r3 + ox]);
    }
  }
  let entry = ((f0 * p.C + c) * p.K + ky) * p.K + kx;
  let filterStride = p.C * kk;
  for (var q = 0u; q < 4u && f0 + q < p.F; q++) {
    Partial[base + entry + q * filterStride] = acc[q];
  }
}
`;

/**
 * Sums the partials of {@link CONV2D_PARAM_GRAD_PARTIAL_WGSL}, parts ascending, and writes entry j
 * to Grad[wOff + j] (weights) or Grad[bOff + j − F·C·K·K] (bias).
 */
export const CONV2D_PARAM_GRAD_REDUCE_WGSL = /* wgsl */ `
struct Params { n: u32, stride: u32, parts: u32, weights: u32, wOff: u32, bOff: u32, p0: u32, p1: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Partial: array<f32>;
@group(0) @binding(2) var<storage, read_write> Grad: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let j = gid.x + gid.y * p.stride;
  if (j >= p.n) { return; }
  var acc = 0.0;
  for (var part = 0u; part < p.parts; part++) {
    acc = acc + Partial[part * p.n + j];
  }
  if (j < p.weights) {
    Grad[p.wOff + j] = acc;
  } else {
    Grad[p.bOff + j - p.weights] = acc;
  }
}
`;

/** How the weight-gradient reduction of a convolution is split (see {@link convParamGradPlan}). */
export interface ConvParamGradPlan {
  /** Gradient entries: filters·channels·kernel² weights then filters biases. */
  readonly outs: number;
  /** Invocations per part: one per 4 filters × channel × kernel tap, one per bias. */
  readonly jobs: number;
  /** Output rows (batch · outHeight) the reduction runs over. */
  readonly rows: number;
  readonly rowsPerPart: number;
  readonly parts: number;
  /**
   * Floats of partial-sum scratch the plan needs (at least parts · outs), enough also for the plan
   * of the same layer with a smaller batch, so one scratch buffer serves every mini-batch size.
   */
  readonly scratchFloats: number;
}

/**
 * Splits the reduction into parts of at least {@link MIN_ROWS_PER_PART} output rows so that
 * parts · jobs is near {@link TARGET_INVOCATIONS} (the conv1 of the MNIST CNN has only 8·25 + 32
 * jobs, each a sum over batch·784 positions) and parts · outs at most {@link MAX_PARTIAL_FLOATS}.
 */
export function convParamGradPlan(shape: Conv2dShape): ConvParamGradPlan {
  const g = convGeometry(shape);
  const kk = shape.kernel * shape.kernel;
  const outs = shape.filters * shape.channels * kk + shape.filters;
  const jobs = Math.ceil(shape.filters / 4) * shape.channels * kk + shape.filters;
  const rows = shape.batch * g.outHeight;
  const target = Math.max(
    1,
    Math.min(Math.ceil(TARGET_INVOCATIONS / jobs), Math.floor(MAX_PARTIAL_FLOATS / outs)),
  );
  const rowsPerPart = Math.max(MIN_ROWS_PER_PART, Math.ceil(rows / target));
  const parts = Math.ceil(rows / rowsPerPart);
  // parts ≤ min(target, ⌈rows / MIN_ROWS_PER_PART⌉), which grows with rows.
  const scratchFloats = Math.min(target, Math.ceil(rows / MIN_ROWS_PER_PART)) * outs;
  return { outs, jobs, rows, rowsPerPart, parts, scratchFloats };
}

/**
 * dw and db of a convolution written into `grad` at the offsets, in two dispatches: partial sums
 * into `partial` (at least `plan.scratchFloats` floats) and their ordered reduction.
 */
export function conv2dParamGradDispatches(
  ctx: GpuContext,
  b: { x: GPUBuffer; dy: GPUBuffer; partial: GPUBuffer; grad: GPUBuffer },
  shape: Conv2dShape,
  at: ConvParameterOffsets,
  plan: ConvParamGradPlan = convParamGradPlan(shape),
): Dispatch[] {
  const g = convGeometry(shape);
  const n = plan.parts * plan.jobs;
  const partialGrid = elementwiseGrid(n, WORKGROUP);
  const partialUniform = ctx.uniform(
    [
      ['u32', n],
      ['u32', partialGrid.stride],
      ['u32', shape.channels],
      ['u32', shape.height],
      ['u32', shape.width],
      ['u32', shape.filters],
      ['u32', shape.kernel],
      ['u32', g.pad],
      ['u32', g.outHeight],
      ['u32', g.outWidth],
      ['u32', plan.outs],
      ['u32', plan.rowsPerPart],
      ['u32', plan.rows],
      ['u32', plan.jobs],
    ],
    'conv2d-param-grad-partial',
  );
  const reduceGrid = elementwiseGrid(plan.outs, WORKGROUP);
  const reduceUniform = ctx.uniform(
    [
      ['u32', plan.outs],
      ['u32', reduceGrid.stride],
      ['u32', plan.parts],
      ['u32', plan.outs - shape.filters],
      ['u32', at.weightOffset],
      ['u32', at.biasOffset],
    ],
    'conv2d-param-grad-reduce',
  );
  return [
    ctx.dispatch(
      'conv2d-param-grad-partial',
      CONV2D_PARAM_GRAD_PARTIAL_WGSL,
      [partialUniform, b.x, b.dy, b.partial],
      partialGrid.groups,
    ),
    ctx.dispatch(
      'conv2d-param-grad-reduce',
      CONV2D_PARAM_GRAD_REDUCE_WGSL,
      [reduceUniform, b.partial, b.grad],
      reduceGrid.groups,
    ),
  ];
}
