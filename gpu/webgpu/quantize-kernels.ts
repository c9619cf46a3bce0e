import { type Dispatch, elementwiseGrid, type GpuContext } from './gpu-context.ts';

const WORKGROUP = 256;

/**
 * Error-feedback stochastic quantizer, the exact op order of `federation/quantize/quantize.ts`:
 * u = f32(update + residual); c = clamp(u, −C, C); t = f32(f32(c + C)·R) with the host's
 * R = f32(1/Δ) (no division); lo = floor(t); frac = t − lo; w = (rng >> 8)·2^-24 with the u32-only
 * lowbias32 counter RNG; ℓ = min(lo + [w < frac], L); e = f32(u − f32(f32(ℓ·Δ) − C)).
 * `key` is `counterKey(key0, key1)`, computed on the host. ℓ·Δ − C may be fused into an FMA by the
 * driver, which can move e by one ulp; ℓ never depends on it.
 */
export const QUANTIZE_WGSL = /* wgsl */ `
struct Params {
  n: u32, stride: u32, key: u32, key1: u32,
  base: u32, maxLevel: u32, hasResidual: u32, pad: u32,
  clip: f32, step: f32, invStep: f32, pad1: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> Update: array<f32>;
@group(0) @binding(2) var<storage, read> Residual: array<f32>;
@group(0) @binding(3) var<storage, read_write> Levels: array<u32>;
@group(0) @binding(4) var<storage, read_write> ResidualOut: array<f32>;

fn lowbias32(x0: u32) -> u32 {
  var x = x0;
  x = x ^ (x >> 16u);
  x = x * 0x7feb352du;
  x = x ^ (x >> 15u);
  x = x * 0x846ca68bu;
  x = x ^ (x >> 16u);
  return x;
}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.stride;
  if (i >= p.n) { return; }
  var u = Update[i];
  if (p.hasResidual != 0u) { u = u + Residual[i]; }
  let c = min(max(u, -p.clip), p.clip);
  let t = (c + p.clip) * p.invStep;
  let lo = floor(t);
  let frac = t - lo;
  let r = lowbias32(lowbias32((p.base + i) ^ p.key) + p.key1);
  let w = f32(r >> 8u) * 0x1p-24f;
  var level = u32(lo);
  if (w < frac) { level = level + 1u; }
  level = min(level, p.maxLevel);
  let scaled = f32(level) * p.step;
  let value = scaled - p.clip;
  Levels[i] = level;
  ResidualOut[i] = u - value;
}
`;

/** Grid and keys of one quantization (validated by the caller). */
export interface QuantizeKernelParams {
  readonly n: number;
  /** `counterKey(key0, key1)`. */
  readonly key: number;
  readonly key1: number;
  readonly counterBase: number;
  readonly maxLevel: number;
  readonly clip: number;
  readonly step: number;
  readonly inverseStep: number;
}

/** Prepares the quantizer; `residual` null binds `update` in its place and skips the add. */
export function quantizeDispatch(
  ctx: GpuContext,
  b: { update: GPUBuffer; residual: GPUBuffer | null; levels: GPUBuffer; residualOut: GPUBuffer },
  q: QuantizeKernelParams,
): Dispatch {
  const { groups, stride } = elementwiseGrid(q.n, WORKGROUP);
  const uniform = ctx.uniform(
    [
      ['u32', q.n],
      ['u32', stride],
      ['u32', q.key],
      ['u32', q.key1],
      ['u32', q.counterBase],
      ['u32', q.maxLevel],
      ['u32', b.residual === null ? 0 : 1],
      ['u32', 0],
      ['f32', q.clip],
      ['f32', q.step],
      ['f32', q.inverseStep],
      ['u32', 0],
    ],
    'quantize',
  );
  return ctx.dispatch(
    'quantize',
    QUANTIZE_WGSL,
    [uniform, b.update, b.residual ?? b.update, b.levels, b.residualOut],
    groups,
  );
}
