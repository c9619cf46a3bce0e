import {
  assertFiniteArray,
  assertInteger,
  assertLength,
  InvalidArgumentError,
  UpdateError,
} from '../../src/errors/index.ts';
import { counterKey, UNIFORM_SCALE } from './counter-random.ts';
import { type QuantBits, type QuantGrid, resolveGrid } from './quant-grid.ts';
import { sameView, viewsOverlap } from './typed-array-overlap.ts';

const UINT32_MAX = 0xffff_ffff;

/** The 64-bit key of the stochastic-rounding stream; both halves are integers in [0, 2^32). */
export interface QuantSeed {
  readonly key0: number;
  readonly key1: number;
}

/** Parameters of one quantization; identical on every site of a round except the seed. */
export interface QuantizeParams {
  /** Bits per parameter. */
  readonly bits: QuantBits;
  /** Clamp bound, same unit as the update, finite and > 0; rounded to float32 before use. */
  readonly clip: number;
  /** Key of the random stream (distinct per site and round, so draws are independent). */
  readonly seed: QuantSeed;
  /**
   * Counter of element 0, integer in [0, 2^32); element i draws counter `(counterBase + i) mod 2^32`.
   * Give each block of one model its global parameter offset so no two elements share a draw.
   * Default 0.
   */
  readonly counterBase?: number;
}

/** Optional caller-owned outputs, to avoid allocating per call. */
export interface QuantizeOut {
  /** Receives the levels; length must equal the update's. Must not overlap `update` or `residual`. */
  readonly levels?: Uint8Array;
  /**
   * Receives the new residual; length must equal the update's. May be the very same view as the
   * input `residual` (in-place error feedback) or as `update`; any other overlap is refused.
   */
  readonly residual?: Float32Array;
}

/** Result of {@link quantize}. */
export interface QuantizeResult {
  /** Lane values ℓ ∈ [0, 2^bits − 1], one per parameter (unpacked; the codec packs them). */
  readonly levels: Uint8Array;
  /** New error-feedback residual e = u − value(ℓ), float32; `out.residual` when given. */
  readonly residual: Float32Array;
}

/**
 * Error-feedback stochastic quantization onto the symmetric midrise grid of {@link quantizationStep}.
 * The signed integer of a level is q = ℓ − 2^(bits−1); `levels` holds the unsigned lane value ℓ.
 *
 * Exact per-element op order, every operation rounded to float32 (`f32(·)`), so an f32 GPU
 * kernel yields identical levels. t uses a multiplication by the host-computed f32 1/Δ, never a
 * division: f32 `*` and `+` are correctly rounded on every GPU, `/` is not (WGSL: 2.5 ULP). GPU
 * caveat for residuals: `ℓ·Δ − C` may be contracted into an FMA there, which can change e[i] in the
 * last bit (never ℓ); keep clip and Δ away from subnormals, which a GPU may flush:
 *
 * ```
 * C    = f32(clip);  Δ = f32(f32(2·C) / (2^bits − 1));  L = 2^bits − 1
 * u    = f32(update[i] + residual[i])          // residual null: u = update[i]
 * c    = min(max(u, −C), C)
 * R    = f32(1 / Δ)                            // host-computed, passed to kernels
 * t    = f32(f32(c + C) · R)                   // t ≥ 0
 * lo   = floor(t);  frac = f32(t − lo)         // frac ∈ [0, 1), exact
 * w    = (counterRandom(key0, key1, (counterBase + i) mod 2^32) >>> 8) · 2^-24
 * ℓ    = min(lo + (w < frac ? 1 : 0), L)
 * v    = f32(f32(ℓ · Δ) − C)                   // value(ℓ)
 * e[i] = f32(u − v)
 * ```
 *
 * E[ℓ] = t up to 2^-24 (w is a multiple of 2^-24), so the quantizer is unbiased to that precision,
 * and Σ_t value(ℓ_t) + e_T telescopes to Σ_t update_t up to float32 rounding of u and e.
 * Clipped-off mass (u − clamp(u)) stays in the residual and is sent in later rounds.
 *
 * Errors: `UPDATE_NON_FINITE` naming the index when update or residual holds NaN/±Infinity or their
 * float32 sum overflows (checked before anything is written); `INVALID_ARGUMENT` for mismatched
 * lengths (both named), bad bits, clip, seed keys or counterBase, or overlapping outputs.
 * Pure: inputs are not modified unless passed as `out.residual`.
 */
/**
 * Validates what every quantizer (CPU or GPU) takes: bits and clip (→ the f32 grid), seed keys
 * and counterBase as uint32, and a residual as long as the update. Values are checked separately
 * by {@link assertSumFinite}.
 */
export function checkQuantizeParams(
  update: Float32Array,
  residual: Float32Array | null,
  params: QuantizeParams,
): { grid: QuantGrid; counterBase: number } {
  const grid = resolveGrid(params.bits, params.clip);
  assertInteger('seed.key0', params.seed.key0, 0, UINT32_MAX);
  assertInteger('seed.key1', params.seed.key1, 0, UINT32_MAX);
  const counterBase = params.counterBase ?? 0;
  assertInteger('counterBase', counterBase, 0, UINT32_MAX);
  if (residual !== null) assertLength('residual', residual.length, update.length, 'but update length is');
  return { grid, counterBase };
}

export function quantize(
  update: Float32Array,
  residual: Float32Array | null,
  params: QuantizeParams,
  out?: QuantizeOut,
): QuantizeResult {
  const { grid, counterBase } = checkQuantizeParams(update, residual, params);
  const n = update.length;
  const levels = out?.levels ?? new Uint8Array(n);
  const newResidual = out?.residual ?? new Float32Array(n);
  assertLength('out.levels', levels.length, n, 'but update length is');
  assertLength('out.residual', newResidual.length, n, 'but update length is');
  checkAliasing(update, residual, levels, newResidual);
  assertSumFinite(update, residual);

  const f = Math.fround;
  const clip = grid.clip;
  const negClip = -clip;
  const step = grid.step;
  const inverseStep = grid.inverseStep;
  const maxLevel = grid.maxLevel;
  const key = counterKey(params.seed.key0, params.seed.key1) | 0;
  const key1 = params.seed.key1 | 0;
  const base = counterBase | 0;
  for (let i = 0; i < n; i++) {
    // Two loop bodies would be faster by a hair; a branch on a loop invariant predicts perfectly.
    const u = residual === null ? update[i]! : f(update[i]! + residual[i]!);
    const c = Math.min(Math.max(u, negClip), clip);
    const t = f(f(c + clip) * inverseStep);
    const lo = Math.floor(t);
    const frac = f(t - lo);
    // counterRandom inlined (int32 bit patterns; same bits as the u32 formula).
    let h = ((base + i) | 0) ^ key;
    h ^= h >>> 16;
    h = Math.imul(h, 0x7feb352d);
    h ^= h >>> 15;
    h = Math.imul(h, 0x846ca68b);
    h ^= h >>> 16;
    h = (h + key1) | 0;
    h ^= h >>> 16;
    h = Math.imul(h, 0x7feb352d);
    h ^= h >>> 15;
    h = Math.imul(h, 0x846ca68b);
    h ^= h >>> 16;
    const w = (h >>> 8) * UNIFORM_SCALE;
    let level = w < frac ? lo + 1 : lo;
    if (level > maxLevel) level = maxLevel;
    levels[i] = level;
    newResidual[i] = f(u - f(f(level * step) - clip));
  }
  return { levels, residual: newResidual };
}

function checkAliasing(
  update: Float32Array,
  residual: Float32Array | null,
  levels: Uint8Array,
  newResidual: Float32Array,
): void {
  // Element i is read before it is written, so an identical view is safe; a shifted one is not.
  const inputs: [string, Float32Array][] = [['update', update]];
  if (residual !== null) inputs.push(['residual', residual]);
  for (const [name, input] of inputs) {
    if (viewsOverlap(levels, input)) {
      throw new InvalidArgumentError(`out.levels overlaps ${name}`, { details: { name: 'out.levels' } });
    }
    if (viewsOverlap(newResidual, input) && !sameView(newResidual, input)) {
      throw new InvalidArgumentError(`out.residual partially overlaps ${name}`, {
        details: { name: 'out.residual' },
      });
    }
  }
  if (viewsOverlap(levels, newResidual)) {
    throw new InvalidArgumentError('out.levels overlaps out.residual', { details: { name: 'out.levels' } });
  }
}

/**
 * Throws `UPDATE_NON_FINITE` naming the index when `update` or `residual` holds NaN/±Infinity or
 * their float32 sum overflows. One pass before any write, so a refused update leaves an in-place
 * residual untouched; every quantizer (CPU or GPU) runs it first.
 */
export function assertSumFinite(update: Float32Array, residual: Float32Array | null): void {
  if (residual === null) {
    assertFiniteArray('update', update);
    return;
  }
  const n = update.length;
  for (let i = 0; i < n; i++) {
    const s = Math.fround(update[i]! + residual[i]!);
    // s − s is NaN exactly when s is NaN or ±Infinity, i.e. an input is non-finite or the sum overflows.
    if (s - s !== 0) {
      const x = update[i]!;
      // The first bad index of the array at fault is i, so the shared assertion names i.
      if (x - x !== 0) assertFiniteArray('update', update);
      const r = residual[i]!;
      if (r - r !== 0) assertFiniteArray('residual', residual);
      throw new UpdateError(
        'UPDATE_NON_FINITE',
        `update[${i}] + residual[${i}] = ${x} + ${r} overflows float32; every value must be finite`,
        { details: { name: 'update+residual', index: i, value: String(s) } },
      );
    }
  }
}
