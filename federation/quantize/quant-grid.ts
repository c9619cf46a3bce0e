import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';

/** Bits per quantized parameter; the grid has 2^bits levels. */
export type QuantBits = 1 | 2 | 4 | 8;

/** Every supported {@link QuantBits}, ascending. */
export const QUANT_BITS: readonly QuantBits[] = Object.freeze([1, 2, 4, 8] as const);

/** Throws `INVALID_ARGUMENT` unless `bits` is one of {@link QUANT_BITS}. */
export function assertQuantBits(bits: unknown): asserts bits is QuantBits {
  if (bits !== 1 && bits !== 2 && bits !== 4 && bits !== 8) {
    throw new InvalidArgumentError(`bits must be one of 1, 2, 4, 8, got ${String(bits)}`, {
      details: { name: 'bits', value: String(bits) },
    });
  }
}

/** The resolved float32 grid shared by quantize and dequantize. */
export interface QuantGrid {
  /** `fround(clip)`: the clamp bound actually used, float32. */
  readonly clip: number;
  /** Δ = fround(fround(2·clip) / (2^bits − 1)), float32, finite and > 0. */
  readonly step: number;
  /**
   * 1/Δ = fround(1 / Δ), float32. The quantizer multiplies by it instead of dividing by Δ:
   * f32 multiplication is correctly rounded on every GPU, f32 division is not (WGSL: 2.5 ULP).
   */
  readonly inverseStep: number;
  /** 2^bits − 1, the largest level. */
  readonly maxLevel: number;
}

/**
 * Validates `bits` and `clip` and returns the float32 grid. `clip` is rounded to float32 first,
 * because the GPU kernel receives an f32; it must be finite and > 0 and leave Δ finite and > 0.
 */
export function resolveGrid(bits: unknown, clip: unknown): QuantGrid {
  assertQuantBits(bits);
  if (typeof clip !== 'number' || !Number.isFinite(clip) || clip <= 0) {
    throw new InvalidArgumentError(`clip must be a finite number > 0, got ${String(clip)}`, {
      details: { name: 'clip', value: String(clip) },
    });
  }
  const clipF = Math.fround(clip);
  const maxLevel = 2 ** bits - 1;
  const step = Math.fround(Math.fround(2 * clipF) / maxLevel);
  if (!(clipF > 0) || !Number.isFinite(step) || !(step > 0)) {
    throw new InvalidArgumentError(`clip ${clip} is outside float32's usable range for ${bits}-bit steps`, {
      details: { name: 'clip', value: String(clip) },
    });
  }
  const inverseStep = Math.fround(1 / step);
  if (!Number.isFinite(inverseStep)) {
    throw new InvalidArgumentError(`clip ${clip} makes 1/Δ overflow float32 at ${bits} bits`, {
      details: { name: 'clip', value: String(clip) },
    });
  }
  return { clip: clipF, step, inverseStep, maxLevel };
}

/**
 * Quantization step Δ = 2·clip / (2^bits − 1) in float32 semantics:
 * `fround(fround(2 · fround(clip)) / (2^bits − 1))`. Level ℓ ∈ {0, …, 2^bits − 1} stands for
 * `value(ℓ) = fround(fround(ℓ · Δ) − fround(clip))`; ℓ = 0 is −clip, ℓ = 2^bits − 1 is +clip
 * (up to float32 rounding). Same unit as `clip`.
 */
export function quantizationStep(bits: QuantBits, clip: number): number {
  return resolveGrid(bits, clip).step;
}

/**
 * Bound on |dequantizeSum(S, K, bits, clip)[j] − Σ_k clamp(u_k[j], −clip, clip)| for every
 * parameter j, where u_k is site k's float32 `update + residual` and `clip` is `fround(clip)`:
 *
 * `K · Δ + K · clip · 2^-21`
 *
 * The K·Δ term: each site's stochastic rounding picks ℓ ∈ {⌊t⌋, ⌊t⌋ + 1}, so |ℓ − t| < 1 step.
 * The slack bounds float32 rounding: ≤ 2·clip·2^-23 per site from computing t (two roundings),
 * ≤ 2·clip·2^-24 from the clamp at the top level when the rounded Δ is short, and ≤ K·clip·2^-24
 * from storing the float64 sum to float32; together < K · clip · 2^-21. Same unit as `clip`.
 *
 * @param contributors - K, integer in [1, 2^32)
 */
export function sumErrorBound(bits: QuantBits, clip: number, contributors: number): number {
  const grid = resolveGrid(bits, clip);
  assertContributors(contributors);
  return contributors * grid.step + contributors * grid.clip * 2 ** -21;
}

/** Throws `INVALID_ARGUMENT` unless `contributors` is an integer in [1, 2^32). */
export function assertContributors(contributors: unknown): asserts contributors is number {
  assertInteger('contributors', contributors, 1, 0xffff_ffff);
}
