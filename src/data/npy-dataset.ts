import type { Dataset } from '../../gpu/engine/index.ts';
import { assertInteger } from '../errors/index.ts';
import { DataError } from './data-error.ts';
import { type NpyArray, readNpy } from './npy.ts';

/** Options of {@link loadNpyDataset}. */
export interface NpyDatasetOptions {
  /** Number of classes (1…256); every label must be an integer below it. */
  readonly classCount: number;
}

/**
 * Loads a features/labels pair of `.npy` files as a {@link Dataset}: features shaped `[n, d]` or
 * `[n, h, w, …]` (flattened to `n` rows of ∏ features, values as stored), labels shaped `[n]`
 * holding integers in `[0, classCount)`.
 *
 * Errors (`DataError`): those of {@link readNpy}; `DATA_FORMAT` for a features array of rank < 2
 * or labels of rank ≠ 1 (field `shape`); `DATA_SHAPE` when the row counts differ or are 0;
 * `DATA_LABEL_RANGE` naming the label file and index.
 */
export function loadNpyDataset(
  featuresPath: string,
  labelsPath: string,
  options: NpyDatasetOptions,
): Dataset {
  assertInteger('classCount', options.classCount, 1, 256);
  const x = readNpy(featuresPath);
  checkFeatureRank(x, featuresPath);
  return npyPairDataset(x, readNpy(labelsPath), { features: featuresPath, labels: labelsPath }, options);
}

/** Features are `[n, d]` or `[n, h, w, …]` (checked before the labels are read). */
function checkFeatureRank(x: NpyArray, featuresPath: string): void {
  if (x.shape.length < 2) {
    throw DataError.at(
      'DATA_FORMAT',
      { file: featuresPath, field: 'shape' },
      `features need shape [n, d] or [n, h, w], got (${x.shape.join(', ')})`,
    );
  }
}

/**
 * {@link loadNpyDataset} on arrays already read with `readNpy` (e.g. whose shape a caller checked
 * first); `paths` name the files in errors. Same options and errors. The features array's values
 * become the data set's features (not copied).
 */
export function npyPairDataset(
  x: NpyArray,
  y: NpyArray,
  paths: { readonly features: string; readonly labels: string },
  options: NpyDatasetOptions,
): Dataset {
  const { classCount } = options;
  assertInteger('classCount', classCount, 1, 256);
  const { features: featuresPath, labels: labelsPath } = paths;
  checkFeatureRank(x, featuresPath);
  if (y.shape.length !== 1) {
    throw DataError.at(
      'DATA_FORMAT',
      { file: labelsPath, field: 'shape' },
      `labels need shape [n], got (${y.shape.join(', ')})`,
    );
  }
  const count = x.shape[0]!;
  if (y.shape[0] !== count) {
    throw DataError.at(
      'DATA_SHAPE',
      { file: labelsPath, field: 'shape' },
      `${y.shape[0]} labels, but ${featuresPath} has ${count} rows`,
      { details: { features: featuresPath, rows: count, labels: y.shape[0] } },
    );
  }
  const featureCount = x.shape.slice(1).reduce((a, b) => a * b, 1);
  if (count === 0 || featureCount === 0) {
    throw DataError.at(
      'DATA_SHAPE',
      { file: featuresPath, field: 'shape' },
      `shape (${x.shape.join(', ')}) holds no data`,
    );
  }
  const labels = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    const v = y.data[i]!;
    if (!Number.isInteger(v) || v < 0 || v >= classCount) {
      throw DataError.at(
        'DATA_LABEL_RANGE',
        { file: labelsPath, field: `label[${i}]` },
        `label ${v} is not an integer in [0, ${classCount})`,
        { details: { index: i, label: v, classCount } },
      );
    }
    labels[i] = v;
  }
  return { features: x.data, labels, count, featureCount, classCount };
}
