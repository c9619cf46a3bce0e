import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { VersionError } from './version-error.ts';

/** Prefix of temporary files; {@link removeTempFiles} removes leftovers of an interrupted write. */
export const TEMP_PREFIX = '.tmp-';

/**
 * Replaces `dir/name` with the concatenation of `parts` atomically and durably: writes a fresh
 * temporary file in `dir` (O_EXCL), fsyncs it, renames it over `name`, then fsyncs `dir` so the
 * rename itself survives a crash. A reader (or a restart) sees the old file or the new one, never
 * a mix.
 *
 * @throws VersionError `STORE_IO` with the OS error as cause; the temporary file is removed.
 */
export function writeFileAtomic(dir: string, name: string, parts: readonly Uint8Array[]): void {
  const target = join(dir, name);
  const temp = join(dir, `${TEMP_PREFIX}${name}-${process.pid}-${randomBytes(6).toString('hex')}`);
  let fd: number | undefined;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    for (const part of parts) {
      let offset = 0;
      while (offset < part.length) offset += writeSync(fd, part, offset, part.length - offset);
    }
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, target);
  } catch (cause) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    throw ioError(`cannot write ${target}`, target, cause);
  }
  syncDir(dir);
}

/**
 * Removes `dir/name` durably (fsyncs `dir`). Returns false when there was no such file.
 *
 * @throws VersionError `STORE_IO`.
 */
export function removeFileDurable(dir: string, name: string): boolean {
  const target = join(dir, name);
  try {
    unlinkSync(target);
  } catch (cause) {
    if (isNotFound(cause)) return false;
    throw ioError(`cannot remove ${target}`, target, cause);
  }
  syncDir(dir);
  return true;
}

/**
 * Renames `dir/from` over `dir/to` durably (fsyncs `dir`). Within one directory the rename is a
 * single atomic step: a reader (or a restart) sees either `from` and the old `to`, or no `from`
 * and the new `to`. Returns false when `from` does not exist (nothing is renamed).
 *
 * @throws VersionError `STORE_IO`.
 */
export function renameDurable(dir: string, from: string, to: string): boolean {
  const source = join(dir, from);
  try {
    renameSync(source, join(dir, to));
  } catch (cause) {
    if (isNotFound(cause)) return false;
    throw ioError(`cannot rename ${source} to ${to}`, source, cause);
  }
  syncDir(dir);
  return true;
}

/**
 * True when `path` exists (not read, not verified).
 *
 * @throws VersionError `STORE_IO` for any failure but "not found".
 */
export function fileExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (cause) {
    if (isNotFound(cause)) return false;
    throw ioError(`cannot stat ${path}`, path, cause);
  }
}

/**
 * The bytes of `path`, or `null` when it does not exist.
 *
 * @throws VersionError `STORE_IO` for any other failure.
 */
export function readFileOrNull(path: string): Uint8Array | null {
  try {
    const buffer = readFileSync(path);
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  } catch (cause) {
    if (isNotFound(cause)) return null;
    throw ioError(`cannot read ${path}`, path, cause);
  }
}

/** Names in `dir` (temporary files excluded). @throws VersionError `STORE_IO`. */
export function listDir(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => !name.startsWith(TEMP_PREFIX));
  } catch (cause) {
    throw ioError(`cannot list ${dir}`, dir, cause);
  }
}

/** Removes temporary files left in `dir` by a write interrupted by a crash. */
export function removeTempFiles(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (cause) {
    throw ioError(`cannot list ${dir}`, dir, cause);
  }
  for (const name of names) {
    if (name.startsWith(TEMP_PREFIX)) rmSync(join(dir, name), { force: true });
  }
}

/**
 * fsyncs a directory so renames and unlinks in it are durable. Windows cannot open a directory
 * for sync; there the call is a no-op.
 */
export function syncDir(dir: string): void {
  if (process.platform === 'win32') return;
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY);
    fsyncSync(fd);
  } catch (cause) {
    throw ioError(`cannot sync directory ${dir}`, dir, cause);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isNotFound(cause: unknown): boolean {
  return (cause as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

function ioError(message: string, path: string, cause: unknown): VersionError {
  return new VersionError('STORE_IO', message, { cause, details: { path } });
}
