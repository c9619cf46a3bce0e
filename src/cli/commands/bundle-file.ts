import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  linkSync,
  lstatSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { AuditError } from '../../audit/index.ts';

// O_NOFOLLOW keeps a planted symlink from redirecting a write; absent on Windows.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A bundle file being written as the bundle is produced: whole at `path` on `commit`, or not at all. */
export interface BundleFile {
  /** Appends a chunk (a bundle sink). */
  write(chunk: Uint8Array): void;
  /** Syncs the file and puts it at its path (refusing an existing one without `force`). */
  commit(): void;
  /** Removes what was written (after a failure). */
  discard(): void;
}

/**
 * Opens `path` for a bundle streamed into it: the bytes go to a temporary file beside it (mode
 * `mode`, created exclusively, symlinks not followed), so no bundle is held in memory and a
 * failed export leaves nothing at `path`. Without `force`, an existing `path` is refused before
 * anything is written, and again when the file is put in place (a hard link, which fails on an
 * existing path).
 *
 * @throws AuditError `BUNDLE_UNREADABLE` naming the path when it exists (without `force`) or cannot
 *   be written.
 */
export function openBundleFile(path: string, options: { force: boolean; mode: number }): BundleFile {
  const refuseExisting = () =>
    new AuditError('BUNDLE_UNREADABLE', `refusing to overwrite ${path} (pass --force to replace it)`, {
      details: { path },
    });
  const unwritable = (cause: unknown) =>
    new AuditError('BUNDLE_UNREADABLE', `cannot write ${path}: ${(cause as Error).message}`, {
      cause,
      details: { path },
    });
  if (!options.force && exists(path)) throw refuseExisting();
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.partial`);
  let fd: number;
  try {
    fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NO_FOLLOW, options.mode);
    fchmodSync(fd, options.mode);
  } catch (cause) {
    throw unwritable(cause);
  }
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  const discard = () => {
    close();
    try {
      unlinkSync(temp);
    } catch {
      // gone already
    }
  };
  return {
    write(chunk) {
      try {
        let at = 0;
        while (at < chunk.length) at += writeSync(fd, chunk, at, chunk.length - at);
      } catch (cause) {
        throw unwritable(cause);
      }
    },
    commit() {
      try {
        fsyncSync(fd);
        close();
        if (options.force) {
          renameSync(temp, path);
        } else {
          linkSync(temp, path);
          unlinkSync(temp);
        }
      } catch (cause) {
        discard();
        if ((cause as NodeJS.ErrnoException).code === 'EEXIST') throw refuseExisting();
        throw unwritable(cause);
      }
    },
    discard,
  };
}
