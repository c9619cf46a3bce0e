import { InvalidArgumentError } from '../../src/errors/index.ts';
import { type Dispatch, type GpuContext, MAX_GROUPS_PER_DIMENSION } from './gpu-context.ts';

/** Edge of the square output tile one 16×16 workgroup computes, and of the K slices it stages. */
export const TILE = 16;

/** How the tiled matmul reads its operands (see {@link matmulWgsl}). */
export interface MatmulVariant {
  /** A is stored [K][M] (read transposed) instead of [M][K]. */
  readonly transA: boolean;
  /** B is stored [N][K] (read transposed) instead of [K][N]. */
  readonly transB: boolean;
  /** Adds bias[biasOff + n] (read from the B buffer) to every output row. */
  readonly bias: boolean;
}

/**
 * Tiled matmul C[M][N] = Σ_k A(m,k)·B(k,n) (+ bias[n]), one output per invocation, 16×16 tiles of
 * A and B staged in workgroup memory. Offsets (in floats) let A, B, bias and C live inside larger
 * buffers (the flat parameter and gradient vectors). The sum runs k = 0, 1, …, K−1 in order into
 * one f32 accumulator; the bias is added last.
 *
 * Uses: dense forward y = x·Wᵀ + b (A = x, B = W transposed, bias); dense backward
 * dx = dy·W (A = dy, B = W); dW = dyᵀ·x (A = dy transposed, B = x).
 */
export function matmulWgsl(v: MatmulVariant): string {
  const a = v.transA ? 'A[p.aOff + k * p.M + m]' : 'A[p.aOff + m * p.K + k]';
  const b = v.transB ? 'B[p.bOff + n * p.K + k]' : 'B[p.bOff + k * p.N + n]';
  return /* wgsl */ `
struct Params { M: u32, N: u32, K: u32, aOff: u32, bOff: u32, cOff: u32, biasOff: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

const T = ${TILE}u;
var<workgroup> As: array<array<f32, ${TILE}>, ${TILE}>;
var<workgroup> Bs: array<array<f32, ${TILE}>, ${TILE}>;

fn loadA(m: u32, k: u32) -> f32 {
  if (m < p.M && k < p.K) { return ${a}; }
  return 0.0;
}
fn loadB(k: u32, n: u32) -> f32 {
  if (k < p.K && n < p.N) { return ${b}; }
  return 0.0;
}

@compute @workgroup_size(${TILE}, ${TILE})
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let row = wid.y * T + lid.y;
  let col = wid.x * T + lid.x;
  var acc = 0.0;
  let tiles = (p.K + T - 1u) / T;
  for (var t = 0u; t < tiles; t++) {
    As[lid.y][lid.x] = loadA(row, t * T + lid.x);
    Bs[lid.y][lid.x] = loadB(t * T + lid.y, col);
    workgroupBarrier();
    let kEnd = min(T, p.K - t * T);
    for (var k = 0u; k < kEnd; k++) {
      acc = acc + As[lid.y][k] * Bs[k][lid.x];
    }
    workgroupBarrier();
  }
  if (row < p.M && col < p.N) {
    ${v.bias ? 'acc = acc + B[p.biasOff + col];' : ''}
    C[p.cOff + row * p.N + col] = acc;
  }
}
`;
}

/**
 * Untiled matmul, one output per invocation looping over k = 0 … K−1 (same sum order as
 * {@link matmulWgsl}), 32 invocations along N per workgroup and no barriers. Faster on software
 * rasterizers (llvmpipe runs workgroup barriers as coroutine switches); real GPUs use the tiled one.
 * Rows beyond 65535 continue along z: m = gid.y + gid.z · rowsPerLayer.
 */
export function simpleMatmulWgsl(v: MatmulVariant): string {
  const a = v.transA ? 'A[p.aOff + k * p.M + m]' : 'A[p.aOff + m * p.K + k]';
  const b = v.transB ? 'B[p.bOff + n * p.K + k]' : 'B[p.bOff + k * p.N + n]';
  return /* wgsl */ `
struct Params { M: u32, N: u32, K: u32, aOff: u32, bOff: u32, cOff: u32, biasOff: u32, rowsPerLayer: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read> B: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;

@compute @workgroup_size(${SIMPLE_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let m = gid.y + gid.z * p.rowsPerLayer;
  if (n >= p.N || m >= p.M) { return; }
  var acc = 0.0;
  for (var k = 0u; k < p.K; k++) {
    acc = acc + ${a} * ${b};
  }
  ${v.bias ? 'acc = acc + B[p.biasOff + n];' : ''}
  C[p.cOff + m * p.N + n] = acc;
}
`;
}

const SIMPLE_WORKGROUP = 32;

/** Which matmul kernel a context uses: 16×16 shared-memory tiles (GPUs) or untiled (software). */
export type MatmulKind = 'tiled' | 'simple';

/** Shapes and float offsets of one matmul. */
export interface MatmulShape {
  readonly M: number;
  readonly N: number;
  readonly K: number;
  readonly aOff?: number;
  readonly bOff?: number;
  readonly cOff?: number;
  readonly biasOff?: number;
}

/** Prepares C = A·B (+ bias) for the variant; the bias, when used, is read from `b`. */
export function matmulDispatch(
  ctx: GpuContext,
  variant: MatmulVariant,
  buffers: { a: GPUBuffer; b: GPUBuffer; c: GPUBuffer },
  s: MatmulShape,
): Dispatch {
  const kind = ctx.matmulKind;
  const key = `matmul-${kind}-${variant.transA ? 't' : 'n'}${variant.transB ? 't' : 'n'}${variant.bias ? '-bias' : ''}`;
  let groups: [number, number, number];
  let rowsPerLayer = 0;
  if (kind === 'tiled') {
    groups = [Math.ceil(s.N / TILE), Math.ceil(s.M / TILE), 1];
  } else {
    rowsPerLayer = Math.min(s.M, MAX_GROUPS_PER_DIMENSION);
    groups = [Math.ceil(s.N / SIMPLE_WORKGROUP), rowsPerLayer, Math.ceil(s.M / rowsPerLayer)];
  }
  if (groups.some((g) => g > MAX_GROUPS_PER_DIMENSION)) {
    throw new InvalidArgumentError(`matmul ${s.M}×${s.K}·${s.K}×${s.N} exceeds the GPU's dispatch grid`, {
      details: { M: s.M, N: s.N, K: s.K },
    });
  }
  const uniform = ctx.uniform(
    [
      ['u32', s.M],
      ['u32', s.N],
      ['u32', s.K],
      ['u32', s.aOff ?? 0],
      ['u32', s.bOff ?? 0],
      ['u32', s.cOff ?? 0],
      ['u32', s.biasOff ?? 0],
      ['u32', rowsPerLayer],
    ],
    key,
  );
  const code = kind === 'tiled' ? matmulWgsl(variant) : simpleMatmulWgsl(variant);
  return ctx.dispatch(key, code, [uniform, buffers.a, buffers.b, buffers.c], groups);
}

/** Dense forward y[batch][outputs] = x·Wᵀ + b, with W and b at `weightOffset`/`biasOffset` of `params`. */
export function denseForwardDispatch(
  ctx: GpuContext,
  x: GPUBuffer,
  params: GPUBuffer,
  y: GPUBuffer,
  shape: { batch: number; inputs: number; outputs: number; weightOffset: number; biasOffset: number },
): Dispatch {
  return matmulDispatch(
    ctx,
    { transA: false, transB: true, bias: true },
    { a: x, b: params, c: y },
    {
      M: shape.batch,
      N: shape.outputs,
      K: shape.inputs,
      bOff: shape.weightOffset,
      biasOff: shape.biasOffset,
    },
  );
}

/** dx[batch][inputs] = dy·W, W at `weightOffset` of `params`. */
export function denseInputGradDispatch(
  ctx: GpuContext,
  dy: GPUBuffer,
  params: GPUBuffer,
  dx: GPUBuffer,
  shape: { batch: number; inputs: number; outputs: number; weightOffset: number },
): Dispatch {
  return matmulDispatch(
    ctx,
    { transA: false, transB: false, bias: false },
    { a: dy, b: params, c: dx },
    { M: shape.batch, N: shape.inputs, K: shape.outputs, bOff: shape.weightOffset },
  );
}

/** dW[outputs][inputs] = dyᵀ·x, written at `weightOffset` of `grad`. */
export function denseWeightGradDispatch(
  ctx: GpuContext,
  dy: GPUBuffer,
  x: GPUBuffer,
  grad: GPUBuffer,
  shape: { batch: number; inputs: number; outputs: number; weightOffset: number },
): Dispatch {
  return matmulDispatch(
    ctx,
    { transA: true, transB: false, bias: false },
    { a: dy, b: x, c: grad },
    { M: shape.outputs, N: shape.inputs, K: shape.batch, cOff: shape.weightOffset },
  );
}

/** Column sums out[outOff + c] = Σ_r x[r·cols + c], summed r = 0, 1, … in order. */
export const COLUMN_SUM_WGSL = /* wgsl */ `
struct Params { rows: u32, cols: u32, outOff: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  if (c >= p.cols) { return; }
  var acc = 0.0;
  for (var r = 0u; r < p.rows; r++) {
    acc = acc + X[r * p.cols + c];
  }
  Out[p.outOff + c] = acc;
}
`;

/** db[outputs] = Σ_batch dy, written at `biasOffset` of `grad`. */
export function denseBiasGradDispatch(
  ctx: GpuContext,
  dy: GPUBuffer,
  grad: GPUBuffer,
  shape: { batch: number; outputs: number; biasOffset: number },
): Dispatch {
  const uniform = ctx.uniform(
    [
      ['u32', shape.batch],
      ['u32', shape.outputs],
      ['u32', shape.biasOffset],
      ['u32', 0],
    ],
    'column-sum',
  );
  return ctx.dispatch(
    'column-sum',
    COLUMN_SUM_WGSL,
    [uniform, dy, grad],
    [Math.ceil(shape.outputs / 64), 1, 1],
  );
}
