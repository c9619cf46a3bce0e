import {
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { gzipSync } from 'node:zlib';
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

const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

function exists(path: string): boolean {
  try {
    lstatSync(path); // a dangling symlink counts as existing
    return true;
  } catch {
    return false;
  }
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
  const force = options.force === true;
  if (!force) {
    const existing = outputs.map((o) => o.path).filter(exists);
    if (existing.length > 0) {
      throw DataError.at(
        'DATA_FILE_EXISTS',
        { file: existing[0]! },
        `refusing to overwrite ${existing.length === 1 ? 'it' : `it and ${existing.length - 1} more`} (pass --force to replace)`,
        { details: { paths: existing } },
      );
    }
  }
  const created: string[] = [];
  try {
    for (const { path, bytes } of outputs) {
      try {
        mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
      } catch (cause) {
        throw unwritable(path, cause);
      }
      const flags =
        constants.O_WRONLY | constants.O_CREAT | NO_FOLLOW | (force ? constants.O_TRUNC : constants.O_EXCL);
      let fd: number;
      try {
        fd = openSync(path, flags, DATA_FILE_MODE);
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code === 'EEXIST') {
          throw DataError.at(
            'DATA_FILE_EXISTS',
            { file: path },
            'refusing to overwrite it (pass --force to replace)',
            {
              cause,
              details: { paths: [path] },
            },
          );
        }
        throw unwritable(path, cause);
      }
      if (!force) created.push(path);
      try {
        fchmodSync(fd, DATA_FILE_MODE);
        let at = 0;
        while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at);
      } catch (cause) {
        throw unwritable(path, cause);
      } finally {
        closeSync(fd);
      }
    }
  } catch (error) {
    for (const path of created) {
      try {
        unlinkSync(path);
      } catch {
        // best effort: the original error is what matters
      }
    }
    throw error;
  }
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
