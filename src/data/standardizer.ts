import type { Dataset } from '../../gpu/engine/index.ts';
import { assertDataset } from '../../gpu/engine/index.ts';
import { DataError } from './data-error.ts';

/** Per-feature mean and standard deviation fitted on training data. */
export interface Standardizer {
  readonly mean: Float64Array;
  /** Population standard deviation; 1 for a constant feature so it maps to 0, not NaN. */
  readonly std: Float64Array;
}

/**
 * Fits a {@link Standardizer} on `data` (two passes in float64; population std, i.e. divided by
 * the row count). A feature whose values are all equal gets std 1. An invalid data set (shape,
 * non-finite feature, label range) is `INVALID_ARGUMENT`. Fit on the training split
 * only and apply the same standardizer to train and test.
 */
export function fitStandardizer(data: Dataset): Standardizer {
  assertDataset(data);
  const { features, count, featureCount: m } = data;
  const mean = new Float64Array(m);
  const min = new Float64Array(m).fill(Number.POSITIVE_INFINITY);
  const max = new Float64Array(m).fill(Number.NEGATIVE_INFINITY);
  for (let r = 0; r < count; r++) {
    for (let j = 0; j < m; j++) {
      const v = features[r * m + j]!;
      mean[j] = mean[j]! + v;
      if (v < min[j]!) min[j] = v;
      if (v > max[j]!) max[j] = v;
    }
  }
  for (let j = 0; j < m; j++) mean[j] = mean[j]! / count;
  const std = new Float64Array(m);
  for (let r = 0; r < count; r++) {
    for (let j = 0; j < m; j++) {
      const d = features[r * m + j]! - mean[j]!;
      std[j] = std[j]! + d * d;
    }
  }
  for (let j = 0; j < m; j++) {
    const s = Math.sqrt(std[j]! / count);
    std[j] = min[j] === max[j] || !(s > 0) ? 1 : s;
  }
  return { mean, std };
}

/**
 * A new {@link Dataset} with every feature mapped to `(x − mean) / std` (float32); labels are
 * copied. A standardizer fitted on another feature count is `DATA_SHAPE`.
 */
export function applyStandardizer(data: Dataset, standardizer: Standardizer): Dataset {
  const { features, count, featureCount: m } = data;
  const { mean, std } = standardizer;
  if (mean.length !== m || std.length !== m) {
    throw DataError.at(
      'DATA_SHAPE',
      { file: '(in memory)', field: 'featureCount' },
      `standardizer has ${mean.length} means and ${std.length} stds, the data set has ${m} features`,
      { details: { expected: m, actual: mean.length } },
    );
  }
  const out = new Float32Array(features.length);
  for (let r = 0; r < count; r++) {
    for (let j = 0; j < m; j++) {
      const i = r * m + j;
      out[i] = (features[i]! - mean[j]!) / std[j]!;
    }
  }
  return { features: out, labels: data.labels.slice(), count, featureCount: m, classCount: data.classCount };
}
