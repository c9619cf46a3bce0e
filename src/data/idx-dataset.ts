import type { Dataset } from '../../gpu/engine/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { DataError } from './data-error.ts';
import { type IdxArray, readIdx } from './idx.ts';

/** Options of {@link loadIdxDataset}. */
export interface IdxDatasetOptions {
  /** Number of classes; every label must be below it. Default 10. */
  readonly classCount?: number;
  /** Keep only the first `limit` rows (≥ 1). Default: all. */
  readonly limit?: number;
  /** Multiplier of the bytes (a finite number > 0). Default: divide by 255, giving [0, 1]. */
  readonly scale?: number;
}

/**
 * Loads an image/label pair of IDX files as a {@link Dataset}: images `[count, …]` become
 * `count` rows of ∏(…) features scaled to [0, 1] (byte / 255, float32; or byte × `scale`), labels `[count]` must
 * be below `classCount`.
 *
 * Errors (`DataError`): `DATA_FILE_MISSING`, `DATA_FORMAT` (from {@link readIdx}, or labels that
 * are not one-dimensional), `DATA_SHAPE` (image and label counts differ, both named; no rows),
 * `DATA_LABEL_RANGE` (label file and item index named).
 */
export function loadIdxDataset(
  imagesPath: string,
  labelsPath: string,
  options: IdxDatasetOptions = {},
): Dataset {
  checkOptions(options);
  return idxPairDataset(
    readIdx(imagesPath),
    readIdx(labelsPath),
    { images: imagesPath, labels: labelsPath },
    options,
  );
}

function checkOptions(options: IdxDatasetOptions): void {
  assertInteger('classCount', options.classCount ?? 10, 1, 256);
  if (options.limit !== undefined) assertInteger('limit', options.limit, 1, Number.MAX_SAFE_INTEGER);
  const scale = options.scale;
  if (scale !== undefined && !(scale > 0 && Number.isFinite(scale))) {
    throw new InvalidArgumentError(`scale must be a finite number > 0, got ${scale}`);
  }
}

/**
 * {@link loadIdxDataset} on IDX arrays already read with `readIdx` (e.g. whose dimensions a caller
 * checked first); `paths` name the files in errors. Same options and errors.
 */
export function idxPairDataset(
  images: IdxArray,
  labels: IdxArray,
  paths: { readonly images: string; readonly labels: string },
  options: IdxDatasetOptions = {},
): Dataset {
  checkOptions(options);
  const classCount = options.classCount ?? 10;
  const { images: imagesPath, labels: labelsPath } = paths;
  if (images.dims.length < 2) {
    throw DataError.at(
      'DATA_FORMAT',
      { file: imagesPath, field: 'dimensions' },
      `images need ≥ 2 dimensions [count, …], got [${images.dims.join(', ')}]`,
    );
  }
  if (labels.dims.length !== 1) {
    throw DataError.at(
      'DATA_FORMAT',
      { file: labelsPath, field: 'dimensions' },
      `labels need 1 dimension [count], got [${labels.dims.join(', ')}]`,
    );
  }
  const imageCount = images.dims[0]!;
  const labelCount = labels.dims[0]!;
  if (imageCount !== labelCount) {
    throw DataError.at(
      'DATA_SHAPE',
      { file: labelsPath, field: 'count' },
      `${labelCount} labels, but ${imagesPath} has ${imageCount} images`,
      { details: { images: imagesPath, imageCount, labelCount } },
    );
  }
  const count = Math.min(imageCount, options.limit ?? imageCount);
  if (count === 0) {
    throw DataError.at('DATA_SHAPE', { file: imagesPath, field: 'count' }, 'the file holds no images');
  }
  const featureCount = images.dims.slice(1).reduce((a, b) => a * b, 1);
  const out = new Uint8Array(labels.data.subarray(0, count));
  for (let i = 0; i < count; i++) {
    if (out[i]! >= classCount) {
      throw DataError.at(
        'DATA_LABEL_RANGE',
        { file: labelsPath, field: `label[${i}]` },
        `label ${out[i]} is outside [0, ${classCount})`,
        { details: { index: i, label: out[i], classCount } },
      );
    }
  }
  const pixels = images.data.subarray(0, count * featureCount);
  const features = new Float32Array(pixels.length);
  const scale = options.scale;
  if (scale === undefined) for (let i = 0; i < pixels.length; i++) features[i] = pixels[i]! / 255;
  else for (let i = 0; i < pixels.length; i++) features[i] = pixels[i]! * scale;
  return { features, labels: out, count, featureCount, classCount };
}
