import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bytesEqual } from '../../crypto/digest/index.ts';
import { bytesToHex, type Commit, modelHash, readFileOrNull, VersionError } from '../versions/index.ts';
// The store's model file reader (header and checksum). Read here without `openModelStore`, which
// tidies the folder (removes temporary files, finishes an interrupted commit): a read-only tool must
// not do that under a running agent.
import { readModelFile } from '../versions/model-file.ts';
import { HistoryError } from './history-error.ts';

/** True when `dir` looks like a model store (it has a `models` folder). */
export function isModelStore(dir: string): boolean {
  try {
    return statSync(join(dir, 'models')).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Throws `STORE_ABSENT` naming `dir` unless it is a model store (see `ModelStore` for the layout).
 */
export function assertModelStore(dir: string): void {
  if (!isModelStore(dir)) {
    throw new HistoryError(
      'STORE_ABSENT',
      `${dir} is not a model store (${existsSync(dir) ? 'no models folder' : 'no such folder'})`,
      { details: { path: dir } },
    );
  }
}

/**
 * The model of `commit` from the model store in `dir`, read without changing anything there
 * (`models/<modelHashHex>.f32`), its checksum checked and its values hashed against
 * `commit.modelHash` — the hash the federation log recorded. Null when the store does not hold it
 * (pruned, or a store started from a snapshot that never had it).
 *
 * @throws VersionError `STORE_CORRUPT` when the file fails its checksum or hashes to another model;
 *   `STORE_IO` when it cannot be read.
 */
export function readStoredModel(dir: string, commit: Commit): Float32Array | null {
  const hex = bytesToHex(commit.modelHash);
  const path = join(dir, 'models', `${hex}.f32`);
  const bytes = readFileOrNull(path);
  if (bytes === null) return null;
  const values = readModelFile(bytes, path);
  let hash: Uint8Array;
  try {
    hash = modelHash(values);
  } catch (cause) {
    throw new VersionError('STORE_CORRUPT', `${path}: the model holds non-finite values`, {
      cause,
      details: { path },
    });
  }
  if (!bytesEqual(hash, commit.modelHash)) {
    throw new VersionError(
      'STORE_CORRUPT',
      `${path}: the model hashes to ${bytesToHex(hash).slice(0, 12)}, not to the log's model hash ${hex.slice(0, 12)} of commit ${bytesToHex(commit.hash).slice(0, 12)}`,
      { details: { path, model: hex } },
    );
  }
  return values;
}
