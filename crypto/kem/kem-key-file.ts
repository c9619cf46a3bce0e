import { CryptoError } from '../../src/errors/index.ts';
// Shared with the signature module so both key kinds get one implementation of the 0o600 rules.
import { readKeyFile, writeKeyFile } from '../signature/key-file-io.ts';
import {
  decodeKemKeyPair,
  decodeKemPublicKey,
  encodeKemKeyPair,
  encodeKemPublicKey,
} from './kem-key-codec.ts';
import type { KemKeyPair } from './kem-key-pair.ts';

/**
 * Writes `key` ({@link encodeKemKeyPair} format) to `path` with mode 0o600, also forcing 0o600
 * on a file that already existed.
 *
 * @throws CryptoError `KEY_FILE_UNWRITABLE` or `KEY_INVALID`; InvalidArgumentError on wrong lengths.
 */
export function saveKemKeyPair(path: string, key: KemKeyPair): void {
  const bytes = encodeKemKeyPair(key);
  try {
    writeKeyFile(path, bytes, true);
  } finally {
    bytes.fill(0);
  }
}

/**
 * Writes an encapsulation key ({@link encodeKemPublicKey} format) to `path`, mode 0o644 on creation.
 *
 * @throws CryptoError `KEY_FILE_UNWRITABLE`; InvalidArgumentError on a wrong length.
 */
export function saveKemPublicKey(path: string, publicKey: Uint8Array): void {
  writeKeyFile(path, encodeKemPublicKey(publicKey), false);
}

/**
 * Reads a key pair written by {@link saveKemKeyPair}, refusing a file group or others can access.
 *
 * @throws CryptoError `KEY_FILE_UNREADABLE`, `KEY_FILE_PERMISSIONS`, `KEY_INVALID` or
 *   `KEM_ALGORITHM_UNKNOWN`.
 */
export function loadKemKeyPair(path: string): KemKeyPair {
  const bytes = readKeyFile(path, true);
  try {
    return decodeKemKeyPair(bytes);
  } catch (cause) {
    throw withPath(cause, path);
  } finally {
    bytes.fill(0);
  }
}

/**
 * Reads an encapsulation key written by {@link saveKemPublicKey}.
 *
 * @throws CryptoError `KEY_FILE_UNREADABLE`, `KEY_INVALID` or `KEM_ALGORITHM_UNKNOWN`.
 */
export function loadKemPublicKey(path: string): Uint8Array {
  const bytes = readKeyFile(path, false);
  try {
    return decodeKemPublicKey(bytes);
  } catch (cause) {
    throw withPath(cause, path);
  }
}

function withPath(cause: unknown, path: string): unknown {
  if (cause instanceof CryptoError) {
    return new CryptoError(cause.code, `key file ${path}: ${cause.message}`, {
      cause,
      details: { ...cause.details, path },
    });
  }
  return cause;
}
