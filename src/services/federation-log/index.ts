export {
  ADMIN_ACTION_COORDINATOR_START,
  ADMIN_ACTION_ROLLBACK,
  adminActionText,
  type ChainCommit,
  type DecidedRound,
  type LoggedAdminAction,
  type LoggedRegistryChange,
  type LoggedSnapshot,
  type LogHistoryOptions,
  MEMBER_RETAIN_ROUNDS,
  type OpenRound,
  type PendingRollback,
} from './history-records.ts';
export {
  checkLink,
  ENTRY_HASH_BYTES,
  LOG_ORIGIN,
  LOG_ORIGIN_HASH,
  type LogEntry,
  type LogPosition,
  openLogEntry,
  recordKind,
  recordsHeld,
} from './log-entry.ts';
export { FEDERATION_LOG_ERROR_CODES, FederationLogError, type FederationLogErrorCode } from './log-error.ts';
export { LogHistory } from './log-history.ts';
export { type FederationLogReader, type LogReaderOptions, openLogReader } from './log-reader.ts';
export { ensureLogStream, LOG_MAX_ENTRY_BYTES, type LogStreamSettings, logStreamName } from './log-stream.ts';
export {
  type FederationLogWriter,
  LOG_MAX_APPEND_BYTES,
  type LogRecordInput,
  type LogWriterOptions,
  openLogWriter,
} from './log-writer.ts';
export {
  type EvidenceKeys,
  type EvidenceRule,
  EvidenceViolation,
  type LoggedPartial,
  type LoggedVote,
  RoundEvidence,
} from './round-evidence.ts';
export { SHARED_LOG_READS_SIZE, SharedLogReads } from './shared-log-reads.ts';
export { type SnapshotEpoch, snapshotEpochOf, snapshotWriter } from './snapshot-schedule.ts';
