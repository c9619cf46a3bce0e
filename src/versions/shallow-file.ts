import { bytesEqual } from '../../crypto/digest/index.ts';
import { HASH_BYTES } from './commit.ts';
import { envelopeHeader, openEnvelope } from './file-envelope.ts';
import { bytesToHex } from './hex.ts';
import { VersionError } from './version-error.ts';

/** Magic of the `shallow` file ("Cohort SHaLlow"). */
export const SHALLOW_FILE_MAGIC = 'CSHL';

/**
 * The parts of the `shallow` file, the store's boundary commits (like git's `.git/shallow`): an
 * envelope (magic "CSHL", length in hashes, SHA-256) around the 32-byte commit hashes, in the
 * order they were recorded, each once.
 */
export function shallowFileParts(hashes: readonly Uint8Array[]): Uint8Array[] {
  const payload = hashes.map((hash) => hash.slice());
  return [envelopeHeader(SHALLOW_FILE_MAGIC, payload, HASH_BYTES), ...payload];
}

/**
 * Inverse of {@link shallowFileParts}: fresh hashes, in file order.
 *
 * @throws VersionError `STORE_CORRUPT` naming `path` (bad envelope, a hash listed twice).
 */
export function readShallowFile(bytes: Uint8Array, path: string): Uint8Array[] {
  const payload = openEnvelope(bytes, SHALLOW_FILE_MAGIC, HASH_BYTES, path);
  const hashes: Uint8Array[] = [];
  for (let offset = 0; offset < payload.length; offset += HASH_BYTES) {
    const hash = payload.slice(offset, offset + HASH_BYTES);
    if (hashes.some((seen) => bytesEqual(seen, hash))) {
      throw new VersionError('STORE_CORRUPT', `${path}: lists commit ${bytesToHex(hash)} twice`, {
        details: { path, commit: bytesToHex(hash) },
      });
    }
    hashes.push(hash);
  }
  return hashes;
}
