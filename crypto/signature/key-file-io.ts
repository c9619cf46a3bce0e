import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  openSync,
  readFileSync,
  writeSync,
} from 'node:fs';
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
 * Reads a key file. For a secret file, refuses one that group or others may read or write
 * (checked on the open descriptor, so the file checked is the file read). The mode check is
 * skipped on Windows, where POSIX mode bits are not meaningful.
 *
 * @returns the file's bytes; the caller owns (and for a secret file, wipes) them.
 * @throws CryptoError `KEY_FILE_UNREADABLE` (cause attached) or `KEY_FILE_PERMISSIONS`.
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
    if (secret && process.platform !== 'win32') {
      const mode = fstatSync(fd).mode & 0o777;
      if ((mode & 0o077) !== 0) {
        throw new CryptoError(
          'KEY_FILE_PERMISSIONS',
          `secret key file ${path} has mode 0o${mode.toString(8)}; it must not be accessible to group or others (chmod 600)`,
          { details: { path, mode: `0o${mode.toString(8)}` } },
        );
      }
    }
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
