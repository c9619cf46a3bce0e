import type { Dataset } from '../../gpu/index.ts';
import type { Standardizer } from '../data/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { CanonicalWriter } from './canonical-writer.ts';
import { carryIntegers, digitsPerField, splitIntegers } from './integer-lanes.ts';

/**
 * Federated statistics (a federation whose data contract says `standardize: federated`): before
 * training, every site sends the sums of its training rows' features in a statistics round, as
 * exact integers in lanes (`integer-lanes.ts`); the sites decrypt only the federation-wide sums,
 * and every site standardizes with the same means and deviations, which the statistics commit
 * binds into the version history (its `params`).
 */

/** Bits of each statistics field (rows, Σx⁺, Σx⁻ and Σx² of a feature, in fixed point). */
export const STATISTICS_FIELD_BITS = 128;

/** Fixed point of a feature value: x travels as round(x · 2^12); its square as that squared. */
export const STATISTICS_FRACTION_BITS = 12;

/** Largest |x| a feature may take (fixed point stays an exact double below 2^52). */
export const STATISTICS_MAX_ABS = 2 ** (52 - STATISTICS_FRACTION_BITS);

const PARAMS_DOMAIN = 'cohort/v1/statistics';
const FIELD_BYTES = STATISTICS_FIELD_BITS / 8;

/**
 * Exact fixed-point sums of a set of rows: `rows`, and per feature Σ of the positive values
 * (`positive`), of the magnitudes of the negative ones (`negative`) and of the squares
 * (`squares`, scaled by 2^(2·12)), all non-negative so they add lane by lane.
 */
export interface FeatureTotals {
  readonly rows: bigint;
  readonly positive: readonly bigint[];
  readonly negative: readonly bigint[];
  readonly squares: readonly bigint[];
}

/** Fields of the statistics of `features` features: rows, then Σx⁺, Σx⁻, Σx² per feature. */
export function statisticsFieldCount(features: number): number {
  if (!Number.isInteger(features) || features < 1 || features > 1 << 20) {
    throw new InvalidArgumentError(`features ${features} must be an integer in [1, 1048576]`);
  }
  return 1 + 3 * features;
}

/** Lanes the statistics of `features` features take at `bits` per lane. */
export function statisticsLaneCount(features: number, bits: number): number {
  return statisticsFieldCount(features) * digitsPerField(STATISTICS_FIELD_BITS, bits);
}

/**
 * The exact fixed-point sums of `data`'s rows (a site's training rows, after the contract's scale).
 *
 * @throws InvalidArgumentError naming the row and feature when a value is not finite or exceeds
 *   {@link STATISTICS_MAX_ABS} in magnitude.
 */
export function featureTotals(data: Dataset): FeatureTotals {
  const d = data.featureCount;
  const scale = 2 ** STATISTICS_FRACTION_BITS;
  const positive = new Array<bigint>(d).fill(0n);
  const negative = new Array<bigint>(d).fill(0n);
  const squares = new Array<bigint>(d).fill(0n);
  // Plain-number partial sums, flushed into BigInt before they could lose a unit.
  const pos = new Float64Array(d);
  const neg = new Float64Array(d);
  const sq = new Float64Array(d);
  const flushAt = 2 ** 52;
  for (let r = 0; r < data.count; r++) {
    for (let j = 0; j < d; j++) {
      const x = data.features[r * d + j]!;
      if (!Number.isFinite(x) || Math.abs(x) > STATISTICS_MAX_ABS) {
        throw new InvalidArgumentError(
          `row ${r} feature ${j} is ${x}: federated statistics take finite values up to ${STATISTICS_MAX_ABS} in magnitude`,
        );
      }
      const q = Math.round(x * scale);
      if (q >= 0) pos[j]! += q;
      else neg[j]! -= q;
      const square = q * q;
      if (square < flushAt) sq[j]! += square;
      else squares[j]! += BigInt(q) * BigInt(q);
      if (pos[j]! >= flushAt || neg[j]! >= flushAt || sq[j]! >= flushAt) flush(j);
    }
  }
  for (let j = 0; j < d; j++) flush(j);
  return { rows: BigInt(data.count), positive, negative, squares };

  function flush(j: number): void {
    positive[j]! += BigInt(pos[j]!);
    negative[j]! += BigInt(neg[j]!);
    squares[j]! += BigInt(sq[j]!);
    pos[j] = 0;
    neg[j] = 0;
    sq[j] = 0;
  }
}

/** The lane levels of one site's totals (see {@link statisticsLaneCount}). */
export function statisticsLevels(totals: FeatureTotals, bits: number): Uint8Array {
  return splitIntegers(fields(totals), STATISTICS_FIELD_BITS, bits, 'statistics field');
}

/**
 * The federation-wide totals from the decrypted lane sums of the statistics lanes. Null when a lane
 * sum is not a sum of digits, or the totals cannot be anyone's (no rows, a negative variance).
 */
export function decodeStatistics(
  laneSums: ArrayLike<number>,
  features: number,
  bits: number,
): FeatureTotals | null {
  const totals = carryIntegers(laneSums, statisticsFieldCount(features), STATISTICS_FIELD_BITS, bits);
  if (totals === null) return null;
  const out = fromFields(totals, features);
  return totalsProblem(out) === undefined ? out : null;
}

/** Sums totals of disjoint row sets (the plain-text check of what the lanes compute). */
export function sumFeatureTotals(parts: readonly FeatureTotals[]): FeatureTotals {
  if (parts.length === 0) throw new InvalidArgumentError('sumFeatureTotals needs at least one part');
  const d = parts[0]!.positive.length;
  const add = (pick: (t: FeatureTotals) => readonly bigint[]) =>
    Array.from({ length: d }, (_, j) => parts.reduce((a, t) => a + pick(t)[j]!, 0n));
  return {
    rows: parts.reduce((a, t) => a + t.rows, 0n),
    positive: add((t) => t.positive),
    negative: add((t) => t.negative),
    squares: add((t) => t.squares),
  };
}

/**
 * The canonical bytes a statistics commit carries as its `params` (domain-separated, fixed-width
 * big-endian totals), so the commit hash binds the federation's means and deviations.
 */
export function encodeStatisticsParams(totals: FeatureTotals): Uint8Array {
  const problem = totalsProblem(totals);
  if (problem !== undefined) throw new InvalidArgumentError(`statistics: ${problem}`);
  const w = new CanonicalWriter().str(PARAMS_DOMAIN).u64(totals.positive.length);
  for (const f of fields(totals)) w.bytes(bigintBytes(f));
  return w.finish();
}

/**
 * Inverse of {@link encodeStatisticsParams}.
 *
 * @throws InvalidArgumentError when `params` are not statistics params.
 */
export function decodeStatisticsParams(params: Uint8Array): FeatureTotals {
  const view = new DataView(params.buffer, params.byteOffset, params.byteLength);
  let at = 0;
  const take = (n: number, what: string): Uint8Array => {
    if (at + n > params.length) throw new InvalidArgumentError(`statistics params end inside ${what}`);
    const out = params.subarray(at, at + n);
    at += n;
    return out;
  };
  const length = (what: string) => view.getUint32(take(4, what).byteOffset - params.byteOffset);
  const domain = new TextDecoder().decode(take(length('the domain'), 'the domain'));
  if (domain !== PARAMS_DOMAIN) throw new InvalidArgumentError('params are not statistics params');
  const featuresBytes = take(8, 'the feature count');
  const features = Number(new DataView(featuresBytes.buffer, featuresBytes.byteOffset, 8).getBigUint64(0));
  const count = statisticsFieldCount(features);
  const values: bigint[] = [];
  for (let f = 0; f < count; f++) {
    const n = length(`field ${f}`);
    if (n !== FIELD_BYTES) throw new InvalidArgumentError(`statistics field ${f} has ${n} bytes`);
    let v = 0n;
    for (const b of take(n, `field ${f}`)) v = (v << 8n) + BigInt(b);
    values.push(v);
  }
  if (at !== params.length) throw new InvalidArgumentError('statistics params have trailing bytes');
  return fromFields(values, features);
}

/**
 * Means and population deviations from federation-wide totals; a feature with (numerically) no
 * spread gets deviation 1, as {@link Standardizer} documents.
 */
export function standardizerFromTotals(totals: FeatureTotals): Standardizer {
  const problem = totalsProblem(totals);
  if (problem !== undefined) throw new InvalidArgumentError(`statistics: ${problem}`);
  const n = Number(totals.rows);
  const scale = 2 ** STATISTICS_FRACTION_BITS;
  const d = totals.positive.length;
  const mean = new Float64Array(d);
  const std = new Float64Array(d);
  for (let j = 0; j < d; j++) {
    const sum = totals.positive[j]! - totals.negative[j]!;
    // Variance in fixed point, exactly: (n·Σq² − (Σq)²) / n², then scaled back.
    const spread = BigInt(n) * totals.squares[j]! - sum * sum;
    mean[j] = Number(sum) / scale / n;
    const variance = Number(spread) / (scale * scale) / (n * n);
    const s = Math.sqrt(Math.max(variance, 0));
    std[j] = s > 1e-12 ? s : 1;
  }
  return { mean, std };
}

function fields(t: FeatureTotals): bigint[] {
  return [t.rows, ...t.positive, ...t.negative, ...t.squares];
}

function fromFields(values: readonly bigint[], features: number): FeatureTotals {
  return {
    rows: values[0]!,
    positive: values.slice(1, 1 + features),
    negative: values.slice(1 + features, 1 + 2 * features),
    squares: values.slice(1 + 2 * features, 1 + 3 * features),
  };
}

function totalsProblem(t: FeatureTotals): string | undefined {
  if (t.rows < 1n) return 'no rows';
  const d = t.positive.length;
  if (d < 1 || t.negative.length !== d || t.squares.length !== d) return 'feature sums of different lengths';
  for (let j = 0; j < d; j++) {
    const sum = t.positive[j]! - t.negative[j]!;
    if (t.rows * t.squares[j]! < sum * sum) return `feature ${j} has a negative variance`;
  }
  return undefined;
}

function bigintBytes(v: bigint): Uint8Array {
  const out = new Uint8Array(FIELD_BYTES);
  let rest = v;
  for (let i = FIELD_BYTES - 1; i >= 0; i--) {
    out[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return out;
}
