import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** One file of a batch: where, its bytes, and its mode (forced, whatever the umask). */
export interface FileOutput {
  readonly path: string;
  readonly bytes: Uint8Array;
  readonly mode: number;
}

/** How {@link writeAllOrNone} behaves and names its failures. */
export interface WriteAllOrNoneOptions {
  /** Replace files that exist already (else any existing path refuses the whole batch). */
  readonly force: boolean;
  /** Create missing parent folders (mode 0755). Default false. */
  readonly mkdirs?: boolean;
  /** The error for paths that exist (all of them, checked first; or one that appeared meanwhile). */
  readonly exists: (paths: readonly string[], cause?: unknown) => Error;
  /** The error for a path that cannot be written. */
  readonly unwritable: (path: string, cause: unknown) => Error;
}

// O_NOFOLLOW keeps a planted symlink from redirecting a write; absent on Windows.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

function exists(path: string): boolean {
  try {
    lstatSync(path); // lstat: a dangling symlink counts as existing
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes every output or none: without `force`, when any path exists nothing is written, and each
 * file is created with O_EXCL so one appearing meanwhile is not clobbered. Each file gets its
 * mode forced, its bytes, and an fsync; symlinks are not followed. On any failure the files this
 * call created are removed again. Does not wipe `bytes`: the caller does.
 */
export function writeAllOrNone(outputs: readonly FileOutput[], options: WriteAllOrNoneOptions): void {
  const { force } = options;
  if (!force) {
    const existing = outputs.map((o) => o.path).filter(exists);
    if (existing.length > 0) throw options.exists(existing);
  }
  const created: string[] = [];
  try {
    for (const { path, bytes, mode } of outputs) {
      if (options.mkdirs === true) {
        try {
          mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
        } catch (cause) {
          throw options.unwritable(path, cause);
        }
      }
      const flags =
        constants.O_WRONLY | constants.O_CREAT | NO_FOLLOW | (force ? constants.O_TRUNC : constants.O_EXCL);
      let fd: number;
      try {
        fd = openSync(path, flags, mode);
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code === 'EEXIST') throw options.exists([path], cause);
        throw options.unwritable(path, cause);
      }
      if (!force) created.push(path);
      try {
        fchmodSync(fd, mode);
        let at = 0;
        while (at < bytes.length) at += writeSync(fd, bytes, at, bytes.length - at);
        fsyncSync(fd);
      } catch (cause) {
        throw options.unwritable(path, cause);
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
