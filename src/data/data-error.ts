import { CohortError } from '../errors/index.ts';

/** Stable codes of {@link DataError}; never renamed once released. */
export const DATA_ERROR_CODES = [
  /** The file (or the package holding it) does not exist or cannot be read. */
  'DATA_FILE_MISSING',
  /** Bytes or text that do not follow the format: bad magic, truncated file, non-numeric field, bad quoting, unknown column. */
  'DATA_FORMAT',
  /** A feature is empty, NaN, infinite or beyond float32 range. */
  'DATA_NON_FINITE',
  /** A label is not an integer in [0, classCount) (or not a key of the label map). */
  'DATA_LABEL_RANGE',
  /** A CSV row has a different number of fields than the header. */
  'DATA_RAGGED',
  /** Sizes disagree: image and label counts, feature counts, no rows at all. */
  'DATA_SHAPE',
  /** A data file to be written exists already (pass `force` / `--force` to replace it). */
  'DATA_FILE_EXISTS',
  /** A data file or its folder cannot be written. */
  'DATA_FILE_UNWRITABLE',
] as const;

export type DataErrorCode = (typeof DATA_ERROR_CODES)[number];

/** Where a data problem is: `file` as the caller named it, 1-based `line` (text files), and the field. */
export interface DataErrorLocation {
  readonly file: string;
  readonly line?: number;
  readonly field?: string;
}

/**
 * Bad or missing input data. The message names the file, line and field, e.g.
 * `data/x.csv line 14, field "age": "abc" is not a number`; `details` holds `file`, `line`,
 * `field` (when known) and any extra sizes.
 */
export class DataError extends CohortError {
  declare readonly code: DataErrorCode;

  constructor(
    code: DataErrorCode,
    message: string,
    options: { cause?: unknown; details: DataErrorLocation & Record<string, unknown> },
  ) {
    super(code, message, options);
  }

  /**
   * Builds the error with the standard message prefix `<file>[ line <n>][, field "<f>"]: <problem>`.
   */
  static at(
    code: DataErrorCode,
    where: DataErrorLocation,
    problem: string,
    extra?: { cause?: unknown; details?: Record<string, unknown> },
  ): DataError {
    let prefix = where.file;
    if (where.line !== undefined) prefix += ` line ${where.line}`;
    if (where.field !== undefined) prefix += `, field "${where.field}"`;
    return new DataError(code, `${prefix}: ${problem}`, {
      cause: extra?.cause,
      details: { ...where, ...(extra?.details ?? {}) },
    });
  }
}
