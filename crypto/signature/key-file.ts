import { CryptoError } from '../../src/errors/index.ts';
import { decodePublicKey, decodeSigningKeyPair, encodePublicKey, encodeSigningKeyPair } from './key-codec.ts';
import { readKeyFile, writeKeyFile } from './key-file-io.ts';
import { sign, verify } from './sign.ts';
import { type PublicSigningKey, type SigningKeyPair, wipeSigningKeyPair } from './signing-key.ts';

const CHECK_DOMAIN = 'key-check';
const CHECK_MESSAGE = new TextEncoder().encode('cohort key pair consistency check');

/**
 * Writes `key` ({@link encodeSigningKeyPair} format) to `path` with mode 0o600, also forcing
 * 0o600 on a file that already existed.
 *
 * @throws CryptoError `KEY_FILE_UNWRITABLE`; InvalidArgumentError on wrong key lengths.
 */
export function saveSigningKeyPair(path: string, key: SigningKeyPair): void {
  const bytes = encodeSigningKeyPair(key);
  try {
    writeKeyFile(path, bytes, true);
  } finally {
    bytes.fill(0);
  }
}

/**
 * Writes `key` ({@link encodePublicKey} format) to `path` with mode 0o644 on creation.
 *
 * @throws CryptoError `KEY_FILE_UNWRITABLE`; InvalidArgumentError on a wrong key length.
 */
export function savePublicKey(path: string, key: PublicSigningKey): void {
  writeKeyFile(path, encodePublicKey(key), false);
}

/**
 * Reads a key pair written by {@link saveSigningKeyPair}. Refuses a file group or others can
 * access, and checks the public key belongs to the secret key by signing and verifying a fixed
 * message (tens of milliseconds for falcon-512).
 *
 * @throws CryptoError `KEY_FILE_UNREADABLE`, `KEY_FILE_PERMISSIONS`, `KEY_INVALID` (bad encoding
 *   or halves that do not match) or `SIGNATURE_ALGORITHM_UNKNOWN`.
 */
export function loadSigningKeyPair(path: string): SigningKeyPair {
  const bytes = readKeyFile(path, true);
  let key: SigningKeyPair;
  try {
    key = decodeSigningKeyPair(bytes);
  } catch (cause) {
    throw rethrowWithPath(cause, path);
  } finally {
    bytes.fill(0);
  }
  let consistent: boolean;
  try {
    consistent = verify(key, CHECK_DOMAIN, CHECK_MESSAGE, sign(key, CHECK_DOMAIN, CHECK_MESSAGE));
  } catch {
    // noble throws on secret keys that do not decode (e.g. a non-invertible Falcon f).
    consistent = false;
  }
  if (!consistent) {
    wipeSigningKeyPair(key);
    throw new CryptoError('KEY_INVALID', `key file ${path}: public key does not match secret key`, {
      details: { path, algorithm: key.algorithm },
    });
  }
  return key;
}

/**
 * Reads a public key written by {@link savePublicKey}.
 *
 * @throws CryptoError `KEY_FILE_UNREADABLE`, `KEY_INVALID` or `SIGNATURE_ALGORITHM_UNKNOWN`.
 */
export function loadPublicKey(path: string): PublicSigningKey {
  const bytes = readKeyFile(path, false);
  try {
    return decodePublicKey(bytes);
  } catch (cause) {
    throw rethrowWithPath(cause, path);
  }
}

/** Adds the file path to a decoding error, keeping its code. */
function rethrowWithPath(cause: unknown, path: string): unknown {
  if (cause instanceof CryptoError) {
    return new CryptoError(cause.code, `key file ${path}: ${cause.message}`, {
      cause,
      details: { ...cause.details, path },
    });
  }
  return cause;
}
