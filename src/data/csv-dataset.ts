import type { Dataset } from '../../gpu/engine/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { type CsvTable, readCsvTable } from './csv-parse.ts';
import { DataError } from './data-error.ts';
import { parseFeature, parseLabel } from './parse-number.ts';

/** Options of {@link readCsvDataset}. */
export interface CsvDatasetOptions {
  /** Header name of the label column. */
  readonly labelColumn: string;
  /** Feature columns in this order. Default: every column except the label and `dropColumns`. */
  readonly featureColumns?: readonly string[];
  /** Columns to leave out (ids, site names). */
  readonly dropColumns?: readonly string[];
  /**
   * Number of classes (1…256). Default: the label map's largest value + 1, else the largest label
   * in the file + 1.
   */
  readonly classCount?: number;
  /**
   * Maps label strings to class numbers (e.g. `{ M: 0, B: 1 }`); when given, every label (trimmed)
   * must be one of its keys. Without it, labels are integer numerals.
   */
  readonly labelMap?: Readonly<Record<string, number>>;
  /** Feature columns that must hold integers (a value like `1.5` is `DATA_FORMAT`). */
  readonly integerColumns?: readonly string[];
}

/** A {@link Dataset} read from CSV, with where its columns and rows came from. */
export interface CsvDataset {
  readonly dataset: Dataset;
  /** Header names of the features, in feature order (`dataset.featureCount` of them). */
  readonly featureNames: string[];
  /** Number of data rows (`dataset.count`). */
  readonly rows: number;
  /** The 1-based line in the file where each row starts (for tracing a row back to the file). */
  readonly lines: Uint32Array;
}

const MAX_CLASSES = 256;

/**
 * Reads a CSV file with a header row into a {@link Dataset} (`.dataset`): float32 features, one integer label
 * per row. Parsing and shape errors are those of {@link readCsvTable} (`DATA_FILE_MISSING`,
 * `DATA_FORMAT`, `DATA_RAGGED`, `DATA_SHAPE`); then an unknown column name is `DATA_FORMAT` on line
 * 1, a non-numeric feature `DATA_FORMAT`, an empty/NaN/infinite one `DATA_NON_FINITE`, and a bad
 * label `DATA_LABEL_RANGE`, each naming file, line and field:
 * `data/x.csv line 14, field "age": "abc" is not a number`.
 */
export function readCsvDataset(path: string, options: CsvDatasetOptions): CsvDataset {
  return csvTableDataset(readCsvTable(path), options);
}

/**
 * {@link readCsvDataset} on a table already read with {@link readCsvTable} (e.g. one whose header a
 * caller checked first); same options and errors, and a non-integer in an `integerColumns` column
 * is `DATA_FORMAT`.
 */
export function csvTableDataset(table: CsvTable, options: CsvDatasetOptions): CsvDataset {
  const { file, header, headerLine, rows } = table;
  const columnIndex = (name: string, role: string): number => {
    const k = header.indexOf(name);
    if (k < 0) {
      throw DataError.at(
        'DATA_FORMAT',
        { file, line: headerLine, field: name },
        `${role} column is not in the header (columns: ${header.join(', ')})`,
      );
    }
    return k;
  };
  const labelIndex = columnIndex(options.labelColumn, 'label');
  const drop = new Set<string>();
  for (const name of options.dropColumns ?? []) {
    columnIndex(name, 'dropped');
    drop.add(name);
  }
  const featureNames = (options.featureColumns ?? header.filter((h) => h !== options.labelColumn)).filter(
    (h) => !drop.has(h),
  );
  const featureIndex = featureNames.map((name) => {
    if (name === options.labelColumn) {
      throw new InvalidArgumentError(`featureColumns includes the label column "${name}"`);
    }
    return columnIndex(name, 'feature');
  });
  if (new Set(featureNames).size !== featureNames.length) {
    throw new InvalidArgumentError(`featureColumns names a column twice: ${featureNames.join(', ')}`);
  }
  if (featureIndex.length === 0) {
    throw DataError.at('DATA_SHAPE', { file, line: headerLine }, 'no feature columns are left');
  }

  const labelMap = options.labelMap;
  let mapMax = -1;
  if (labelMap !== undefined) {
    for (const [key, v] of Object.entries(labelMap)) {
      assertInteger(`labelMap["${key}"]`, v, 0, MAX_CLASSES - 1);
      mapMax = Math.max(mapMax, v);
    }
    if (mapMax < 0) throw new InvalidArgumentError('labelMap is empty');
  }
  if (options.classCount !== undefined) assertInteger('classCount', options.classCount, 1, MAX_CLASSES);
  const integer = new Set(options.integerColumns ?? []);
  for (const name of integer) {
    if (!featureNames.includes(name)) {
      throw new InvalidArgumentError(`integerColumns names "${name}", which is not a feature column`);
    }
  }
  const limit = options.classCount ?? (labelMap === undefined ? MAX_CLASSES : mapMax + 1);

  const count = rows.length;
  const featureCount = featureIndex.length;
  const features = new Float32Array(count * featureCount);
  const labels = new Uint8Array(count);
  const lines = new Uint32Array(count);
  let maxLabel = 0;
  const labelName = options.labelColumn;
  for (let r = 0; r < count; r++) {
    const row = rows[r]!;
    lines[r] = row.line;
    for (let j = 0; j < featureCount; j++) {
      const k = featureIndex[j]!;
      const name = featureNames[j]!;
      const where = { file, line: row.line, field: name };
      const v = parseFeature(row.fields[k]!, where);
      if (integer.has(name) && !Number.isInteger(v)) {
        throw DataError.at('DATA_FORMAT', where, `${JSON.stringify(row.fields[k])} is not an integer`, {
          details: { value: row.fields[k] },
        });
      }
      features[r * featureCount + j] = v;
    }
    const raw = row.fields[labelIndex]!;
    const where = { file, line: row.line, field: labelName };
    let y: number;
    if (labelMap === undefined) {
      y = parseLabel(raw, limit, where);
    } else {
      const key = raw.trim();
      const mapped = Object.hasOwn(labelMap, key) ? labelMap[key] : undefined;
      if (mapped === undefined || mapped >= limit) {
        throw DataError.at(
          'DATA_LABEL_RANGE',
          where,
          mapped === undefined
            ? `label ${JSON.stringify(raw)} is not one of ${Object.keys(labelMap).join(', ')}`
            : `label ${JSON.stringify(raw)} maps to ${mapped}, outside [0, ${limit})`,
          { details: { value: raw } },
        );
      }
      y = mapped;
    }
    labels[r] = y;
    if (y > maxLabel) maxLabel = y;
  }
  const classCount = options.classCount ?? (labelMap === undefined ? maxLabel + 1 : mapMax + 1);
  return {
    dataset: { features, labels, count, featureCount, classCount },
    featureNames,
    rows: count,
    lines,
  };
}
