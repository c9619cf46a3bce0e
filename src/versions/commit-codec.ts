import { bytesEqual } from '../../crypto/digest/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import {
  COMMIT_KINDS,
  type Commit,
  commitFieldsProblem,
  commitHash,
  HASH_BYTES,
  MAX_COMMIT_PARAMS_BYTES,
} from './commit.ts';
import { VersionError } from './version-error.ts';

/** "CCMT": Cohort CoMmiT. */
const MAGIC = [0x43, 0x43, 0x4d, 0x54] as const;

/** Format version written by {@link encodeCommit}; the only one {@link decodeCommit} reads. */
export const COMMIT_FORMAT_VERSION = 1;

/** Bytes before `params`. */
export const COMMIT_HEADER_BYTES = 156;

/**
 * Binary form of `commit`, little-endian:
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | magic "CCMT" |
 * | 4 | 1 | format version (1) |
 * | 5 | 1 | kind: 0 genesis, 1 round, 2 rollback |
 * | 6 | 2 | reserved, 0 |
 * | 8 | 32 | hash |
 * | 40 | 32 | parent |
 * | 72 | 8 | height, uint64 (≤ 2^53 − 1) |
 * | 80 | 8 | round, uint64 (≤ 2^53 − 1) |
 * | 88 | 32 | aggregateDigest |
 * | 120 | 32 | modelHash |
 * | 152 | 4 | n, uint32: params length (≤ 1 MiB) |
 * | 156 | n | params |
 *
 * @throws InvalidArgumentError naming the field when the commit breaks an invariant or its hash
 *   does not verify (a commit is never written with a wrong hash).
 */
export function encodeCommit(commit: Commit): Uint8Array {
  const problem = commitFieldsProblem(commit, 'commit');
  if (problem !== null) throw new InvalidArgumentError(problem, { details: { name: 'commit' } });
  if (!(commit.hash instanceof Uint8Array) || !bytesEqual(commitHash(commit), commit.hash)) {
    throw new InvalidArgumentError('commit.hash is not the hash of the commit fields', {
      details: { name: 'commit.hash' },
    });
  }
  const bytes = new Uint8Array(COMMIT_HEADER_BYTES + commit.params.length);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC, 0);
  view.setUint8(4, COMMIT_FORMAT_VERSION);
  view.setUint8(5, COMMIT_KINDS.indexOf(commit.kind));
  view.setUint16(6, 0, true);
  bytes.set(commit.hash, 8);
  bytes.set(commit.parent, 40);
  view.setBigUint64(72, BigInt(commit.height), true);
  view.setBigUint64(80, BigInt(commit.round), true);
  bytes.set(commit.aggregateDigest, 88);
  bytes.set(commit.modelHash, 120);
  view.setUint32(152, commit.params.length, true);
  bytes.set(commit.params, COMMIT_HEADER_BYTES);
  return bytes;
}

/**
 * Inverse of {@link encodeCommit}. Accepts only canonical bytes of a commit whose hash verifies.
 * The returned arrays are fresh (they never alias `bytes`).
 *
 * @throws VersionError `COMMIT_MALFORMED` naming the field ("commit bytes length 150, header
 *   says 160"), or `COMMIT_HASH_MISMATCH` when the stored hash is not the hash of the fields.
 */
export function decodeCommit(bytes: Uint8Array): Commit {
  if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError('commit bytes must be a Uint8Array');
  if (bytes.length < COMMIT_HEADER_BYTES) {
    throw malformed(`commit bytes length ${bytes.length}, the header alone is ${COMMIT_HEADER_BYTES}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (MAGIC.some((b, i) => bytes[i] !== b))
    throw malformed('commit bytes do not start with the magic "CCMT"');
  const version = view.getUint8(4);
  if (version !== COMMIT_FORMAT_VERSION) {
    throw malformed(`commit format version ${version}, this build reads ${COMMIT_FORMAT_VERSION}`);
  }
  const kindId = view.getUint8(5);
  const kind = COMMIT_KINDS[kindId];
  if (kind === undefined)
    throw malformed(`commit kind id ${kindId}, known ids are 0–${COMMIT_KINDS.length - 1}`);
  const reserved = view.getUint16(6, true);
  if (reserved !== 0) throw malformed(`commit reserved field is ${reserved}, must be 0`);
  const height = safeU64(view, 72, 'height');
  const round = safeU64(view, 80, 'round');
  const n = view.getUint32(152, true);
  if (n > MAX_COMMIT_PARAMS_BYTES)
    throw malformed(`commit params length ${n} exceeds ${MAX_COMMIT_PARAMS_BYTES}`);
  const expected = COMMIT_HEADER_BYTES + n;
  if (bytes.length !== expected)
    throw malformed(`commit bytes length ${bytes.length}, header says ${expected}`);
  const at = (offset: number): Uint8Array => bytes.slice(offset, offset + HASH_BYTES);
  const commit: Commit = {
    hash: at(8),
    parent: at(40),
    height,
    round,
    aggregateDigest: at(88),
    modelHash: at(120),
    params: bytes.slice(COMMIT_HEADER_BYTES, expected),
    kind,
  };
  const problem = commitFieldsProblem(commit, 'commit');
  if (problem !== null) throw malformed(problem);
  if (!bytesEqual(commitHash(commit), commit.hash)) {
    throw new VersionError('COMMIT_HASH_MISMATCH', 'commit hash is not the hash of the commit fields', {
      details: { name: 'commit.hash' },
    });
  }
  return commit;
}

function safeU64(view: DataView, offset: number, field: string): number {
  const value = view.getBigUint64(offset, true);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed(`commit ${field} ${value} exceeds 2^53 − 1`);
  return Number(value);
}

function malformed(message: string): VersionError {
  return new VersionError('COMMIT_MALFORMED', message, { details: { name: 'commit bytes' } });
}
