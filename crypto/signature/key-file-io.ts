import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  realpathSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CryptoError } from '../../src/errors/index.ts';

/** Mode of every file holding secret key material: owner read/write only. */
export const SECRET_KEY_FILE_MODE = 0o600;

/** Mode of public key files. */
export const PUBLIC_KEY_FILE_MODE = 0o644;

// O_NOFOLLOW keeps a planted symlink from redirecting a secret key write; absent on Windows.
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

/**
 * Writes `bytes` to `path`, creating it with `mode` and, for a secret file, forcing the mode on a
 * file that already existed (`open`'s mode only applies on creation). Flushed to disk before return.
 *
 * @throws CryptoError `KEY_FILE_UNWRITABLE` with the OS error as cause.
 */
export function writeKeyFile(path: string, bytes: Uint8Array, secret: boolean): void {
  const mode = secret ? SECRET_KEY_FILE_MODE : PUBLIC_KEY_FILE_MODE;
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | NO_FOLLOW, mode);
    if (secret) fchmodSync(fd, mode);
    let offset = 0;
    while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    fsyncSync(fd);
  } catch (cause) {
    throw new CryptoError('KEY_FILE_UNWRITABLE', `cannot write key file ${path}`, {
      cause,
      details: { path },
    });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Reads a key file. For a secret file, refuses (see {@link assertSecretFileSafe}) one that group
 * or others may read or write, one owned by another user than this process's (or root), and one
 * whose folder group or others may write (they could replace it) or another user owns. The file's
 * mode and owner are checked on the open descriptor, so the file checked is the file read. The
 * checks are skipped on Windows, where POSIX modes and owners are not meaningful.
 *
 * @returns the file's bytes; the caller owns (and for a secret file, wipes) them.
 * @throws CryptoError `KEY_FILE_UNREADABLE` (cause attached), `KEY_FILE_PERMISSIONS`,
 *   `KEY_FILE_OWNER` or `KEY_FOLDER_PERMISSIONS`, each naming the path and what is wrong.
 */
export function readKeyFile(path: string, secret: boolean): Uint8Array {
  let fd: number;
  try {
    // Symlinks are followed on read: orchestrators (e.g. Kubernetes secret volumes) mount keys that way.
    fd = openSync(path, constants.O_RDONLY);
  } catch (cause) {
    throw new CryptoError('KEY_FILE_UNREADABLE', `cannot read key file ${path}`, {
      cause,
      details: { path },
    });
  }
  try {
    if (secret) assertSecretFileSafe(path, fd);
    try {
      const buffer = readFileSync(fd);
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    } catch (cause) {
      throw new CryptoError('KEY_FILE_UNREADABLE', `cannot read key file ${path}`, {
        cause,
        details: { path },
      });
    }
  } finally {
    closeSync(fd);
  }
}

/** Whether `uid` may own a secret or its folder: this process's user, or root. */
function trustedOwner(uid: number): boolean {
  return uid === 0 || uid === process.getuid?.();
}

/**
 * The secret-file rules, on the open descriptor `fd` of `path` (POSIX only; nothing on Windows):
 * 1. the file's mode gives group and others nothing (`KEY_FILE_PERMISSIONS`: chmod 600);
 * 2. its owner is this process's user or root (`KEY_FILE_OWNER`): another user could rewrite it;
 * 3. its folder (and, for a symlink, the folder of the file it points to) is owned by this
 *    process's user or root and not writable by group or others (`KEY_FOLDER_PERMISSIONS`):
 *    whoever may write the folder can replace the file by another of their making. The sticky
 *    bit is not an exception (a shared /tmp is no place for a key).
 * Each error names the path and the mode or owner found.
 *
 * @throws CryptoError as listed.
 */
export function assertSecretFileSafe(path: string, fd: number): void {
  if (process.platform === 'win32') return;
  const stat = fstatSync(fd);
  const mode = stat.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new CryptoError(
      'KEY_FILE_PERMISSIONS',
      `secret key file ${path} has mode 0o${mode.toString(8)}; it must not be accessible to group or others (chmod 600)`,
      { details: { path, mode: `0o${mode.toString(8)}` } },
    );
  }
  if (!trustedOwner(stat.uid)) {
    throw new CryptoError(
      'KEY_FILE_OWNER',
      `secret key file ${path} is owned by uid ${stat.uid}, not by this process's user (uid ${process.getuid?.()}) or root: another user could rewrite it (chown it)`,
      { details: { path, uid: stat.uid } },
    );
  }
  const folders = new Set([dirname(resolve(path))]);
  try {
    if (lstatSync(path).isSymbolicLink()) folders.add(dirname(realpathSync(path)));
  } catch {
    // Gone since it was opened: the descriptor's file is the one read; its folder as named is checked.
  }
  for (const folder of folders) {
    let info: ReturnType<typeof statSync>;
    try {
      info = statSync(folder);
    } catch (cause) {
      throw new CryptoError('KEY_FILE_UNREADABLE', `cannot check the folder ${folder} of key file ${path}`, {
        cause,
        details: { path, folder },
      });
    }
    const folderMode = info.mode & 0o7777;
    if ((folderMode & 0o022) !== 0) {
      throw new CryptoError(
        'KEY_FOLDER_PERMISSIONS',
        `secret key file ${path} is in folder ${folder} of mode 0o${folderMode.toString(8)}: group or others may write it and replace the file (chmod go-w ${folder}, or keep keys in a 0700 folder)`,
        { details: { path, folder, mode: `0o${folderMode.toString(8)}` } },
      );
    }
    if (!trustedOwner(info.uid)) {
      throw new CryptoError(
        'KEY_FOLDER_PERMISSIONS',
        `secret key file ${path} is in folder ${folder} owned by uid ${info.uid}, not by this process's user (uid ${process.getuid?.()}) or root: its owner could replace the file`,
        { details: { path, folder, uid: info.uid } },
      );
    }
  }
}
