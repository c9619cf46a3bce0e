export {
  COMMIT_HASH_DOMAIN,
  COMMIT_KINDS,
  type Commit,
  type CommitFields,
  type CommitKind,
  commitFieldsProblem,
  commitHash,
  createCommit,
  genesisCommit,
  HASH_BYTES,
  MAX_COMMIT_PARAMS_BYTES,
  rollbackCommit,
  roundCommit,
  verifyCommit,
  ZERO_HASH,
} from './commit.ts';
export { COMMIT_FORMAT_VERSION, COMMIT_HEADER_BYTES, decodeCommit, encodeCommit } from './commit-codec.ts';
export { ENVELOPE_FORMAT_VERSION, ENVELOPE_HEADER_BYTES } from './file-envelope.ts';
export { bytesToHex, hexToBytes } from './hex.ts';
export { MODEL_FILE_MAGIC } from './model-file.ts';
export { MODEL_HASH_DOMAIN, modelHash } from './model-hash.ts';
export { type ModelStore, openModelStore } from './model-store.ts';
export { PREPARED_FILE_MAGIC, type PreparedCandidate } from './prepared-file.ts';
export { VERSION_ERROR_CODES, VersionError, type VersionErrorCode } from './version-error.ts';
