export { readFileOrNull, writeFileAtomic } from './atomic-file.ts';
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
  statisticsCommit,
  verifyCommit,
  ZERO_HASH,
} from './commit.ts';
export { COMMIT_FORMAT_VERSION, COMMIT_HEADER_BYTES, decodeCommit, encodeCommit } from './commit-codec.ts';
export { ENVELOPE_FORMAT_VERSION, ENVELOPE_HEADER_BYTES } from './file-envelope.ts';
export { bytesToHex, hexToBytes } from './hex.ts';
export { LOG_CURSOR_FILE_MAGIC, type LogCursor } from './log-cursor-file.ts';
export { MODEL_FILE_MAGIC } from './model-file.ts';
export { MODEL_HASH_DOMAIN, modelHash } from './model-hash.ts';
export { type ModelStore, openModelStore } from './model-store.ts';
export { PREPARED_FILE_MAGIC, type PreparedCandidate } from './prepared-file.ts';
export {
  decodeSafetensors,
  encodeSafetensors,
  SAFETENSORS_ERROR_CODES,
  SAFETENSORS_MAX_HEADER_BYTES,
  SAFETENSORS_METADATA_KEY,
  type SafetensorsContents,
  type SafetensorsDecodedTensor,
  SafetensorsError,
  type SafetensorsErrorCode,
  type SafetensorsLimits,
  type SafetensorsTensor,
} from './safetensors.ts';
export {
  layerTensorNames,
  modelTensors,
  parametersFromTensors,
  type SafetensorsTensorLike,
} from './safetensors-model.ts';
export { SHALLOW_FILE_MAGIC } from './shallow-file.ts';
export {
  encodeSnapshot,
  MAX_SNAPSHOT_SIGNATURE_BYTES,
  type OpenedSnapshot,
  type OpenSnapshotOptions,
  openSnapshot,
  readSnapshotHeader,
  SNAPSHOT_FORMAT_VERSION,
  SNAPSHOT_MAGIC,
  SNAPSHOT_SIGNING_DOMAIN,
  type SnapshotExpectation,
  type SnapshotInput,
  type SnapshotLimits,
} from './snapshot.ts';
export { DATA_KEY_BYTES } from './snapshot-cipher.ts';
export { SNAPSHOT_ERROR_CODES, SnapshotError, type SnapshotErrorCode } from './snapshot-error.ts';
export { MAX_SNAPSHOT_HEADER_BYTES, type SnapshotHeader } from './snapshot-header.ts';
export { peekStoreHead } from './store-peek.ts';
export { STRATEGY_STATE_HASH_DOMAIN, strategyStateHash } from './strategy-state-hash.ts';
export { VERSION_ERROR_CODES, VersionError, type VersionErrorCode } from './version-error.ts';
