import { readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { readCsvDataset } from './csv-dataset.ts';
import { DataError } from './data-error.ts';
import { readIdx } from './idx.ts';
import { readNpy } from './npy.ts';

/** Options of {@link checkDataFiles}. */
export interface CheckDataOptions {
  /** Number of classes (1…256): every label must be an integer below it. Default: any label 0…255. */
  readonly classCount?: number;
  /**
   * Shape of one example, e.g. `[28, 28]`: IDX images must be `[n, …imageShape]`, `.npy` features
   * `[n, …imageShape]` or `[n, ∏ imageShape]`, CSV rows ∏ imageShape features.
   */
  readonly imageShape?: readonly number[];
  /** Label column of CSV files; required when a `.csv` is checked. */
  readonly labelColumn?: string;
}

/** What a checked file holds. */
export type DataFileKind = 'idx-images' | 'idx-labels' | 'npy-features' | 'npy-labels' | 'csv';

/** One valid file: its kind, rows, shape and (for labels and CSV) label histogram. */
export interface DataFileReport {
  readonly file: string;
  readonly kind: DataFileKind;
  readonly rows: number;
  /** Full shape, rows first (CSV: `[rows, features]`). */
  readonly shape: readonly number[];
  /** Rows per label (index = label); only for label files and CSV. */
  readonly histogram?: readonly number[];
}

/** The outcome of {@link checkDataFiles}: the files found valid, and the first problem if any. */
export type DataCheckReport =
  | { readonly ok: true; readonly files: readonly DataFileReport[] }
  | { readonly ok: false; readonly files: readonly DataFileReport[]; readonly error: DataError };

/** Names a folder is searched for: `.csv`, `.npy`, IDX (`…-ubyte`, `.idx`, with or without `.gz`). */
const DATA_NAME = /(\.csv|\.npy|-ubyte|\.idx)(\.gz)?$/;

function kindOf(file: string): 'csv' | 'npy' | 'idx' {
  if (file.endsWith('.csv')) return 'csv';
  if (file.endsWith('.npy')) return 'npy';
  return 'idx';
}

/** Expands folders to the data files directly in them (sorted); files are kept as given. */
function expand(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    let dir = false;
    try {
      dir = statSync(p).isDirectory();
    } catch {
      // a missing path is reported by the reader as DATA_FILE_MISSING
    }
    if (!dir) {
      out.push(p);
      continue;
    }
    const names = readdirSync(p)
      .filter((n) => DATA_NAME.test(n))
      .sort();
    if (names.length === 0) {
      throw DataError.at('DATA_FILE_MISSING', { file: p }, 'the folder holds no .csv, .npy or IDX files');
    }
    for (const n of names) out.push(join(p, n));
  }
  return out;
}

function histogramOf(
  labels: ArrayLike<number>,
  file: string,
  classCount: number | undefined,
  field: (i: number) => string,
): number[] {
  const limit = classCount ?? 256;
  const hist: number[] = [];
  for (let i = 0; i < labels.length; i++) {
    const y = labels[i]!;
    if (!Number.isInteger(y) || y < 0 || y >= limit) {
      throw DataError.at(
        'DATA_LABEL_RANGE',
        { file, field: field(i) },
        `label ${y} is not an integer in [0, ${limit})`,
        { details: { index: i, label: y, classCount: limit } },
      );
    }
    while (hist.length <= y) hist.push(0);
    hist[y]!++;
  }
  while (classCount !== undefined && hist.length < classCount) hist.push(0);
  return hist;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((n, k) => n === b[k]);
}

function checkOne(file: string, options: CheckDataOptions): DataFileReport {
  const kind = kindOf(file);
  const image = options.imageShape;
  const imageSize = image?.reduce((a, b) => a * b, 1);
  if (kind === 'csv') {
    if (options.labelColumn === undefined) {
      throw new InvalidArgumentError(`${file}: a CSV file needs its label column (--label <column>)`);
    }
    const csv = readCsvDataset(file, {
      labelColumn: options.labelColumn,
      ...(options.classCount === undefined ? {} : { classCount: options.classCount }),
    });
    const d = csv.dataset;
    if (imageSize !== undefined && d.featureCount !== imageSize) {
      throw DataError.at(
        'DATA_SHAPE',
        { file, line: 1, field: 'columns' },
        `${d.featureCount} feature columns, but the image shape ${image!.join('×')} needs ${imageSize}`,
      );
    }
    const hist = histogramOf(d.labels, file, options.classCount, (i) => `line ${csv.lines[i]}`);
    return { file, kind, rows: d.count, shape: [d.count, d.featureCount], histogram: hist };
  }
  const arr = kind === 'idx' ? readIdx(file) : readNpy(file);
  const shape = 'dims' in arr ? arr.dims : arr.shape;
  const rows = shape[0] ?? 0;
  if (shape.length === 1) {
    const hist = histogramOf(arr.data, file, options.classCount, (i) => `label[${i}]`);
    return { file, kind: kind === 'idx' ? 'idx-labels' : 'npy-labels', rows, shape, histogram: hist };
  }
  const inner = shape.slice(1);
  if (image !== undefined) {
    const fits = sameShape(inner, image) || (kind === 'npy' && inner.length === 1 && inner[0] === imageSize);
    if (!fits) {
      throw DataError.at(
        'DATA_SHAPE',
        { file, field: kind === 'idx' ? 'dimensions' : 'shape' },
        `each example is ${inner.join('×')}, expected ${image.join('×')}`,
        { details: { expected: [...image], actual: inner } },
      );
    }
  }
  if (rows === 0) {
    throw DataError.at(
      'DATA_SHAPE',
      { file, field: kind === 'idx' ? 'dimensions' : 'shape' },
      'holds no rows',
    );
  }
  return { file, kind: kind === 'idx' ? 'idx-images' : 'npy-features', rows, shape };
}

/** Pairs features/images with labels in the same folder and format; refuses unequal row counts. */
function checkPairs(reports: readonly DataFileReport[]): void {
  const groups = new Map<string, { x: DataFileReport[]; y: DataFileReport[] }>();
  for (const r of reports) {
    if (r.kind === 'csv') continue;
    const key = `${dirname(r.file)}\0${r.kind.startsWith('idx') ? 'idx' : 'npy'}`;
    const g = groups.get(key) ?? { x: [], y: [] };
    (r.kind.endsWith('labels') ? g.y : g.x).push(r);
    groups.set(key, g);
  }
  for (const { x, y } of groups.values()) {
    if (x.length === 1 && y.length === 1) {
      if (x[0]!.rows !== y[0]!.rows) {
        throw DataError.at(
          'DATA_SHAPE',
          { file: y[0]!.file, field: 'rows' },
          `${y[0]!.rows} labels, but ${x[0]!.file} has ${x[0]!.rows} rows`,
          { details: { features: x[0]!.file, rows: x[0]!.rows, labels: y[0]!.rows } },
        );
      }
      continue;
    }
    const lone = x.length === 0 ? y[0]! : y.length === 0 ? x[0]! : x.length > 1 ? x[1]! : y[1]!;
    throw DataError.at(
      'DATA_SHAPE',
      { file: lone.file, field: 'pair' },
      x.length === 0 || y.length === 0
        ? `no ${lone.kind.endsWith('labels') ? 'images/features' : 'labels'} file of the same format beside it in ${dirname(lone.file)} (${basename(lone.file)} needs its pair)`
        : `${dirname(lone.file)} holds ${x.length} image/feature and ${y.length} label files; give one pair per folder`,
    );
  }
}

/**
 * Validates site data files: IDX images/labels pairs (gzip or not), `.npy` features/labels pairs
 * (rank ≥ 2 is features, rank 1 labels) and CSV files with a label column. A folder stands for
 * the data files directly in it. Images and labels pair up by folder and format, one pair per
 * folder, and must have equal row counts. Checks every label against `classCount`, every example
 * against `imageShape`, and every CSV value (text in a number column, a missing column, ragged
 * rows: see {@link readCsvDataset}). Stops at the first problem.
 *
 * Returns the report of each valid file and, on failure, the first `DataError` (its message names
 * file, line or row, and field). Argument errors (`INVALID_ARGUMENT`: a CSV without `labelColumn`,
 * bad `classCount`) are thrown.
 */
export function checkDataFiles(paths: readonly string[], options: CheckDataOptions = {}): DataCheckReport {
  if (paths.length === 0) throw new InvalidArgumentError('no data files to check');
  if (options.classCount !== undefined) assertInteger('classCount', options.classCount, 1, 256);
  for (const n of options.imageShape ?? []) assertInteger('imageShape', n, 1, 1 << 20);
  const files: DataFileReport[] = [];
  try {
    for (const file of expand(paths)) files.push(checkOne(file, options));
    checkPairs(files);
  } catch (error) {
    if (error instanceof DataError) return { ok: false, files, error };
    throw error;
  }
  return { ok: true, files };
}

/** One line describing a valid file: `<file>: <kind>, <rows> rows, shape [..][, labels 0:n 1:n …]`. */
export function formatDataFileReport(r: DataFileReport): string {
  const hist =
    r.histogram === undefined ? '' : `, labels ${r.histogram.map((n, label) => `${label}:${n}`).join(' ')}`;
  return `${r.file}: ${r.kind}, ${r.rows} rows, shape [${r.shape.join(', ')}]${hist}`;
}
