import type { Dispatch, GpuContext, UniformField } from './gpu-context.ts';

const WORKGROUP = 64;

/**
 * Softmax cross-entropy, one invocation per row: with m = max_c z_c and s = Σ_c exp(z_c − m),
 * loss_r = log(s) − (z_label − m) and dz_c = (exp(z_c − m)/s − [c = label]) / rows. Writes the
 * row's loss and its arg-max class (the first maximum) at `rowBase + r`.
 */
export const SOFTMAX_XENT_WGSL = /* wgsl */ `
struct Params { rows: u32, classes: u32, rowBase: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Z: array<f32>;
@group(0) @binding(2) var<storage, read> Labels: array<u32>;
@group(0) @binding(3) var<storage, read_write> Dz: array<f32>;
@group(0) @binding(4) var<storage, read_write> RowLoss: array<f32>;
@group(0) @binding(5) var<storage, read_write> Predicted: array<u32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let r = gid.x;
  if (r >= p.rows) { return; }
  let base = r * p.classes;
  var m = Z[base];
  var arg = 0u;
  for (var c = 1u; c < p.classes; c++) {
    let z = Z[base + c];
    if (z > m) { m = z; arg = c; }
  }
  var s = 0.0;
  for (var c = 0u; c < p.classes; c++) {
    s = s + exp(Z[base + c] - m);
  }
  let label = Labels[r];
  let n = f32(p.rows);
  for (var c = 0u; c < p.classes; c++) {
    let prob = exp(Z[base + c] - m) / s;
    Dz[base + c] = (prob - select(0.0, 1.0, c == label)) / n;
  }
  RowLoss[p.rowBase + r] = log(s) - (Z[base + label] - m);
  Predicted[p.rowBase + r] = arg;
}
`;

/** Losses[step] = Σ_r RowLoss[r] (r = 0 … rows−1 in order, f32), by a single invocation. */
export const LOSS_MEAN_WGSL = /* wgsl */ `
struct Params { rows: u32, step: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> RowLoss: array<f32>;
@group(0) @binding(2) var<storage, read_write> Losses: array<f32>;

@compute @workgroup_size(1)
fn main() {
  var acc = 0.0;
  for (var r = 0u; r < p.rows; r++) {
    acc = acc + RowLoss[r];
  }
  Losses[p.step] = acc;
}
`;

/** Uniform fields of {@link SOFTMAX_XENT_WGSL}. */
export function softmaxFields(rows: number, classes: number, rowBase: number): UniformField[] {
  return [
    ['u32', rows],
    ['u32', classes],
    ['u32', rowBase],
    ['u32', 0],
  ];
}

/** Uniform fields of {@link LOSS_MEAN_WGSL}. */
export function lossMeanFields(rows: number, step: number): UniformField[] {
  return [
    ['u32', rows],
    ['u32', step],
  ];
}

/** Prepares the softmax kernel; returns its uniform so the caller can rewrite `rowBase`. */
export function softmaxDispatch(
  ctx: GpuContext,
  b: { logits: GPUBuffer; labels: GPUBuffer; dlogits: GPUBuffer; rowLoss: GPUBuffer; predicted: GPUBuffer },
  rows: number,
  classes: number,
  rowBase = 0,
): { dispatch: Dispatch; uniform: GPUBuffer } {
  const uniform = ctx.uniform(softmaxFields(rows, classes, rowBase), 'softmax-xent');
  const dispatch = ctx.dispatch(
    'softmax-xent',
    SOFTMAX_XENT_WGSL,
    [uniform, b.logits, b.labels, b.dlogits, b.rowLoss, b.predicted],
    [Math.ceil(rows / WORKGROUP), 1, 1],
  );
  return { dispatch, uniform };
}

/** Prepares the batch loss-sum kernel; returns its uniform so the caller can rewrite `step`. */
export function lossMeanDispatch(
  ctx: GpuContext,
  rowLoss: GPUBuffer,
  losses: GPUBuffer,
  rows: number,
  step = 0,
): { dispatch: Dispatch; uniform: GPUBuffer } {
  const uniform = ctx.uniform(lossMeanFields(rows, step), 'loss-mean');
  const dispatch = ctx.dispatch('loss-mean', LOSS_MEAN_WGSL, [uniform, rowLoss, losses], [1, 1, 1]);
  return { dispatch, uniform };
}
