import { gzipSync } from 'node:zlib';
import { writeAllOrNone } from '../files/index.ts';
import { DataError } from './data-error.ts';
import { encodeIdx } from './idx.ts';
import { encodeNpy, type NpyDtype } from './npy.ts';

/** Mode of every data file written: 0644 (data files are not secret). */
export const DATA_FILE_MODE = 0o644;

/** One file for {@link writeDataFiles}: where, and its bytes. */
export interface DataFileOutput {
  readonly path: string;
  readonly bytes: Uint8Array;
}

/** Options of the data file writers. */
export interface WriteDataOptions {
  /** Replace files that exist already. Default false: an existing file is `DATA_FILE_EXISTS`. */
  readonly force?: boolean;
}

function unwritable(path: string, cause: unknown): DataError {
  const code = (cause as NodeJS.ErrnoException).code ?? 'unknown error';
  return DataError.at('DATA_FILE_UNWRITABLE', { file: path }, `cannot be written (${String(code)})`, {
    cause,
  });
}

/**
 * Writes every output with mode 0644 (forced, whatever the umask), creating missing folders; all
 * or nothing for existing files: without `force`, when any path exists none is written
 * (`DATA_FILE_EXISTS` naming them all), and each file is created with O_EXCL so one appearing
 * meanwhile is not clobbered. Symlinks are not followed. On a failure the files this call created
 * are removed again.
 *
 * @throws DataError `DATA_FILE_EXISTS` or `DATA_FILE_UNWRITABLE`.
 */
export function writeDataFiles(outputs: readonly DataFileOutput[], options: WriteDataOptions = {}): void {
  writeAllOrNone(
    outputs.map(({ path, bytes }) => ({ path, bytes, mode: DATA_FILE_MODE })),
    {
      force: options.force === true,
      mkdirs: true,
      exists: (paths, cause) =>
        DataError.at(
          'DATA_FILE_EXISTS',
          { file: paths[0]! },
          `refusing to overwrite ${paths.length === 1 ? 'it' : `it and ${paths.length - 1} more`} (pass --force to replace)`,
          { ...(cause === undefined ? {} : { cause }), details: { paths: [...paths] } },
        ),
      unwritable,
    },
  );
}

/**
 * The bytes of an unsigned-byte IDX file, gzip-compressed when `gzip` (deterministic: no name,
 * no time stamp); {@link parseIdx} reads either back.
 */
export function idxFileBytes(dims: readonly number[], data: Uint8Array, gzip: boolean): Uint8Array {
  const raw = encodeIdx(dims, data);
  return gzip ? gzipSync(raw) : raw;
}

/**
 * Writes an unsigned-byte IDX file (the inverse of {@link readIdx}), gzip-compressed when the
 * path ends in `.gz`; see {@link writeDataFiles} for modes, folders and `force`.
 */
export function writeIdx(
  path: string,
  dims: readonly number[],
  data: Uint8Array,
  options: WriteDataOptions = {},
): void {
  writeDataFiles([{ path, bytes: idxFileBytes(dims, data, path.endsWith('.gz')) }], options);
}

/**
 * Writes a format-1.0 `.npy` file as `numpy.save` would (the inverse of {@link readNpy}); see
 * {@link writeDataFiles} for modes, folders and `force`.
 */
export function writeNpy(
  path: string,
  shape: readonly number[],
  dtype: NpyDtype,
  values: ArrayLike<number>,
  options: WriteDataOptions = {},
): void {
  writeDataFiles([{ path, bytes: encodeNpy(shape, dtype, values) }], options);
}
