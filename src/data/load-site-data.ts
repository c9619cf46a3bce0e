import type { Dataset } from '../../gpu/engine/index.ts';
import { checkSiteConfig, type DataContract, type SiteConfig } from '../config/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { csvTableDataset } from './csv-dataset.ts';
import { readCsvTable } from './csv-parse.ts';
import { contractExampleShape, contractFeatureCount, contractLabelMap } from './data-contract.ts';
import { DataError } from './data-error.ts';
import { readIdx } from './idx.ts';
import { idxPairDataset } from './idx-dataset.ts';
import { readNpy } from './npy.ts';
import { npyPairDataset } from './npy-dataset.ts';
import { subset } from './subset.ts';
import { trainTestSplit } from './train-test-split.ts';

/** A site's rows, read and checked against the federation's data contract, then split. */
export interface SiteData {
  /** The rows the site trains on (all rows without a `validation` section). */
  readonly train: Dataset;
  /** The held-out rows (`validation.fraction` of them, stratified), or null without a `validation` section. */
  readonly validation: Dataset | null;
  /** The files read, in the order read. */
  readonly files: readonly string[];
}

/** Where value `column` of row `row` came from, for error messages: a CSV line and column, else indices. */
type ValuePlace = (row: number, column: number) => { line?: number; field: string };

interface RawRows {
  readonly data: Dataset;
  /** The file the features came from. */
  readonly file: string;
  readonly files: readonly string[];
  readonly place: ValuePlace;
}

const LISTED_COLUMNS = 30;

function headerList(header: readonly string[]): string {
  const shown = header.slice(0, LISTED_COLUMNS).join(', ');
  return header.length > LISTED_COLUMNS ? `${shown}, … (${header.length} columns)` : shown;
}

function sizeText(shape: readonly number[]): string {
  return shape.join('×');
}

function readCsvRows(contract: DataContract, csv: NonNullable<SiteConfig['data']['csv']>): RawRows {
  const table = readCsvTable(csv.path);
  const { file, header, headerLine } = table;
  const features = contract.features!;
  const columns = features.map((f) => csv.columns[f.name] ?? f.name);
  columns.forEach((column, i) => {
    if (header.includes(column)) return;
    const name = features[i]!.name;
    const which = column === name ? `contract feature ${i + 1}` : `contract feature ${i + 1}, ${name}`;
    throw DataError.at(
      'DATA_FORMAT',
      { file, line: headerLine },
      `column ${JSON.stringify(column)} (${which}) is missing; header has: ${headerList(header)}`,
      { details: { field: column, feature: name } },
    );
  });
  const labelColumn = csv.label ?? contract.label.name!;
  if (!header.includes(labelColumn)) {
    throw DataError.at(
      'DATA_FORMAT',
      { file, line: headerLine },
      `label column ${JSON.stringify(labelColumn)} is missing; header has: ${headerList(header)}`,
      { details: { field: labelColumn } },
    );
  }
  const read = csvTableDataset(table, {
    labelColumn,
    featureColumns: columns,
    labelMap: contractLabelMap(contract),
    classCount: contract.label.classes.length,
    integerColumns: columns.filter((_, i) => features[i]!.type === 'integer'),
  });
  return {
    data: read.dataset,
    file,
    files: [file],
    place: (row, column) => ({ line: read.lines[row]!, field: columns[column]! }),
  };
}

/** Refuses a file whose examples are not the contract's shape (`flat` also accepts `[∏ shape]`). */
function checkExampleShape(
  contract: DataContract,
  file: string,
  field: string,
  inner: readonly number[],
  flat: boolean,
): void {
  const want = contractExampleShape(contract);
  const same = inner.length === want.length && inner.every((n, k) => n === want[k]);
  const size = contractFeatureCount(contract);
  if (same || (flat && inner.length === 1 && inner[0] === size)) return;
  const problem =
    contract.kind === 'image'
      ? `images are ${sizeText(inner)}, the contract says ${sizeText(want)}`
      : `rows hold ${sizeText(inner)} values, the contract has ${size} features`;
  throw DataError.at('DATA_SHAPE', { file, field }, problem, {
    details: { expected: want, actual: [...inner] },
  });
}

function readIdxRows(contract: DataContract, idx: NonNullable<SiteConfig['data']['idx']>): RawRows {
  const images = readIdx(idx.images);
  if (images.dims.length >= 2) {
    checkExampleShape(contract, idx.images, 'dimensions', images.dims.slice(1), false);
  }
  const labels = readIdx(idx.labels);
  const data = idxPairDataset(images, labels, idx, { classCount: contract.label.classes.length, scale: 1 });
  return {
    data,
    file: idx.images,
    files: [idx.images, idx.labels],
    place: (row, column) => ({ field: `image[${row}], value ${column}` }),
  };
}

function readNpyRows(contract: DataContract, npy: NonNullable<SiteConfig['data']['npy']>): RawRows {
  const x = readNpy(npy.features);
  if (x.shape.length >= 2) checkExampleShape(contract, npy.features, 'shape', x.shape.slice(1), true);
  const data = npyPairDataset(x, readNpy(npy.labels), npy, { classCount: contract.label.classes.length });
  const features = contract.kind === 'tabular' ? contract.features! : [];
  const m = data.featureCount;
  features.forEach((f, j) => {
    if (f.type !== 'integer') return;
    for (let r = 0; r < data.count; r++) {
      const v = data.features[r * m + j]!;
      if (!Number.isInteger(v)) {
        throw DataError.at(
          'DATA_FORMAT',
          { file: npy.features, field: `row ${r}, feature ${f.name}` },
          `${v} is not an integer (the contract's feature ${f.name} is integer)`,
          { details: { row: r, feature: f.name, value: v } },
        );
      }
    }
  });
  return {
    data,
    file: npy.features,
    files: [npy.features, npy.labels],
    place: (row, column) => ({ field: `row ${row}, column ${column}` }),
  };
}

/** Multiplies every feature by `scale` in place (float32), refusing a product beyond float32 range. */
function applyScale(raw: RawRows, scale: number): void {
  const { features, featureCount } = raw.data;
  for (let i = 0; i < features.length; i++) {
    const x = Math.fround(features[i]! * scale);
    if (!Number.isFinite(x)) {
      const place = raw.place(Math.floor(i / featureCount), i % featureCount);
      throw DataError.at(
        'DATA_NON_FINITE',
        { file: raw.file, ...place },
        `${features[i]} times the contract's scale ${scale} is beyond float32 range`,
        { details: { value: features[i], scale } },
      );
    }
    features[i] = x;
  }
}

/**
 * Reads a site's data files (`site.data`: a CSV file, an IDX pair or a `.npy` pair) and checks
 * every row against the federation's data contract, then applies `preprocessing.scale` and splits
 * off the validation rows (`site.validation`: stratified, a pure function of the rows, the
 * fraction and the seed; see `trainTestSplit`). Features come out in contract order; a label
 * becomes its class index: a CSV label is matched by its text against `label.classes` (an integer
 * class by its decimal text), an IDX or `.npy` label must already be a class index, an integer
 * below the number of classes.
 *
 * Errors name the file, the line (CSV) or row, and the field: `ConfigError` `CONFIG_INVALID` when
 * the site configuration does not fit the contract ({@link checkSiteConfig}); `DataError`
 * `DATA_FORMAT` for a missing column, text in a number column, a non-integer in an integer feature;
 * `DATA_LABEL_RANGE` for a label outside the classes; `DATA_SHAPE` for images or rows of another
 * size than the contract's, unequal image and label counts, or fewer than 2 rows to split;
 * `DATA_NON_FINITE` for an empty, NaN or infinite value (or one the scale takes beyond float32);
 * `DATA_FILE_MISSING` for a file that cannot be read.
 */
export function loadSiteData(contract: DataContract, site: SiteConfig): SiteData {
  if (typeof contract !== 'object' || contract === null) {
    throw new InvalidArgumentError('contract must be the federation data contract (config.data)');
  }
  if (typeof site !== 'object' || site === null || typeof site.data !== 'object') {
    throw new InvalidArgumentError('site must be a validated site configuration (loadSiteConfig)');
  }
  checkSiteConfig(site, contract);
  const { csv, idx, npy } = site.data;
  const raw =
    csv !== undefined
      ? readCsvRows(contract, csv)
      : idx !== undefined
        ? readIdxRows(contract, idx)
        : readNpyRows(contract, npy!);
  const scale = contract.preprocessing.scale;
  if (scale !== undefined && scale !== 1) applyScale(raw, scale);
  const validation = site.validation;
  if (validation === undefined) return { train: raw.data, validation: null, files: raw.files };
  const { count } = raw.data;
  if (count < 2) {
    throw DataError.at(
      'DATA_SHAPE',
      { file: raw.file, field: 'rows' },
      `${count} row, too few for a validation split (at least 2 are needed: one to train on, one to validate)`,
      { details: { rows: count, fraction: validation.fraction } },
    );
  }
  const split = trainTestSplit(raw.data, validation.fraction, validation.seed);
  return {
    train: subset(raw.data, split.train),
    validation: subset(raw.data, split.test),
    files: raw.files,
  };
}
