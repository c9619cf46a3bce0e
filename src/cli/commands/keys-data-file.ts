import { CryptoError } from '../../errors/index.ts';
import { DATA_KEY_BYTES } from '../../versions/snapshot-cipher.ts';
import { fileMagic } from './keys-files.ts';

/** Magic of a federation data key file ("Cohort Data Key", format 1). */
export const DATA_KEY_FILE_MAGIC = 'CDK1';

/** Bytes of a data key file: magic (4) ‖ the 32-byte key. */
export const DATA_KEY_FILE_BYTES = DATA_KEY_FILE_MAGIC.length + DATA_KEY_BYTES;

/**
 * A data key file's bytes: 'CDK1' ‖ key (32 bytes), 36 in all. The result holds the key: the
 * caller wipes it.
 */
export function encodeDataKeyFile(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(DATA_KEY_FILE_BYTES);
  out.set(new TextEncoder().encode(DATA_KEY_FILE_MAGIC), 0);
  out.set(key, DATA_KEY_FILE_MAGIC.length);
  return out;
}

/**
 * The 32-byte key in a data key file's bytes (a copy: the caller wipes it, and `bytes`).
 *
 * @throws CryptoError `KEY_INVALID` naming `path` unless `bytes` is 'CDK1' followed by 32 bytes.
 */
export function dataKeyFromFile(bytes: Uint8Array, path: string): Uint8Array {
  if (bytes.length !== DATA_KEY_FILE_BYTES || fileMagic(bytes) !== DATA_KEY_FILE_MAGIC) {
    throw new CryptoError(
      'KEY_INVALID',
      `${path} is not a federation data key file (${DATA_KEY_FILE_MAGIC} header and ${DATA_KEY_BYTES} key bytes)`,
      { details: { path, bytes: bytes.length } },
    );
  }
  return bytes.slice(DATA_KEY_FILE_MAGIC.length);
}
