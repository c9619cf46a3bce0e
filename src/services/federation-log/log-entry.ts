import { bytesEqual, sha256 } from '../../../crypto/digest/index.ts';
import {
  type KeyLookup,
  type LogRecordBody,
  type LogRecordKind,
  openControl,
  readControl,
} from '../../protocol/index.ts';
import { FederationLogError } from './log-error.ts';

/** Bytes of every entry hash (SHA-256). */
export const ENTRY_HASH_BYTES = 32;

/** The `previousEntry` of sequence 1, and the hash of "before the first entry". */
export const LOG_ORIGIN_HASH: Uint8Array = new Uint8Array(ENTRY_HASH_BYTES);

/** Where a reader stands: the last entry it has verified (sequence 0 with {@link LOG_ORIGIN_HASH}: none). */
export interface LogPosition {
  readonly sequence: number;
  /** SHA-256 of that entry's stored bytes. */
  readonly hash: Uint8Array;
}

/** The position before the first entry. */
export const LOG_ORIGIN: LogPosition = Object.freeze({ sequence: 0, hash: LOG_ORIGIN_HASH });

/** One verified entry of the federation log. */
export interface LogEntry {
  /** JetStream sequence (= `record.sequence`). */
  readonly sequence: number;
  /** The exact stored bytes: a framed `log-record` control message signed by the coordinator. */
  readonly bytes: Uint8Array;
  /** SHA-256 of `bytes`: the next entry's `previousEntry`. */
  readonly hash: Uint8Array;
  readonly record: LogRecordBody;
}

/** The kind of record an entry holds. */
export function recordKind(record: LogRecordBody): LogRecordKind {
  if (record.record !== undefined) return record.record;
  if (record.decision) return 'decision';
  if (record.roundOpen) return 'roundOpen';
  if (record.registryChange) return 'registryChange';
  if (record.adminAction) return 'adminAction';
  if (record.partial) return 'partial';
  if (record.vote) return 'vote';
  if (record.votes) return 'votes';
  if (record.thresholdEpoch) return 'thresholdEpoch';
  return 'snapshot';
}

/** Who may sign a log and where: what {@link openLogEntry} checks an entry against. */
export interface LogEntryContext {
  readonly federation: string;
  readonly coordinator: string;
  readonly keys: KeyLookup;
  readonly stream: string;
}

/**
 * Opens stored bytes as a log entry: a `log-record` signed by `coordinator` (its key from
 * `keys`), for `federation`, claiming sequence `sequence` (any, when undefined: an entry that
 * arrived by broadcast), holding exactly one record. Does not check the link to the previous
 * entry (see {@link checkLink}).
 *
 * `signature: 'later'` checks all of that but the signature itself (the signer's name is still
 * checked): for a reader that authenticates a run of linked entries by checking the signature of
 * the last one, whose `previousEntry` hash chain covers every entry before it. Such an entry must
 * not be used before an entry it chains to has been opened with its signature checked.
 *
 * @throws FederationLogError `LOG_ENTRY_INVALID` naming the sequence and the problem.
 */
export function openLogEntry(
  bytes: Uint8Array,
  sequence: number | undefined,
  opts: LogEntryContext,
  options: { readonly signature?: 'check' | 'later' } = {},
): LogEntry {
  const invalid = (problem: string, cause?: unknown) =>
    new FederationLogError('LOG_ENTRY_INVALID', `log ${opts.stream} entry ${sequence}: ${problem}`, {
      cause,
      details: { sequence, stream: opts.stream },
    });
  let record: LogRecordBody;
  try {
    if (options.signature === 'later') {
      const read = readControl(bytes, 'log-record');
      // Worded as openControl words it: a reader's message does not depend on when it checks.
      if (read.signer !== opts.coordinator) {
        throw new Error(
          `log-record signed by ${JSON.stringify(read.signer)}, only ${JSON.stringify(opts.coordinator)} may send it here`,
        );
      }
      record = read.body;
    } else {
      record = openControl(bytes, 'log-record', opts.keys, { signer: opts.coordinator }).body;
    }
  } catch (err) {
    throw invalid(`not a signed log record: ${(err as Error).message}`, err);
  }
  if (record.federation !== opts.federation) {
    throw invalid(`is for federation ${JSON.stringify(record.federation)}, not ${opts.federation}`);
  }
  if (sequence !== undefined && record.sequence !== sequence)
    throw invalid(`claims sequence ${record.sequence}`);
  if (!Number.isSafeInteger(record.sequence) || record.sequence < 1)
    throw invalid(`claims sequence ${record.sequence}`);
  if (!(record.previousEntry instanceof Uint8Array) || record.previousEntry.length !== ENTRY_HASH_BYTES) {
    throw invalid(`previousEntry is not ${ENTRY_HASH_BYTES} bytes`);
  }
  const set = recordsHeld(record);
  if (set !== 1) throw invalid(`holds ${set} records, expects exactly one`);
  return { sequence: record.sequence, bytes, hash: sha256(bytes), record };
}

/** How many of the record kinds this build knows a `LogRecord` holds (a valid entry holds exactly one). */
export function recordsHeld(record: LogRecordBody): number {
  return [
    record.roundOpen,
    record.decision,
    record.snapshot,
    record.registryChange,
    record.adminAction,
    record.partial,
    record.vote,
    record.votes,
    record.thresholdEpoch,
  ].filter((r) => r != null).length;
}

/**
 * Throws `LOG_CHAIN_BROKEN` unless `entry` directly follows `previous` (next sequence, and its
 * `previousEntry` is `previous.hash`).
 */
export function checkLink(entry: LogEntry, previous: LogPosition, stream: string): void {
  if (entry.sequence !== previous.sequence + 1) {
    throw new FederationLogError(
      'LOG_CHAIN_BROKEN',
      `log ${stream}: entry ${entry.sequence} does not follow entry ${previous.sequence}`,
      { details: { sequence: entry.sequence, previous: previous.sequence } },
    );
  }
  if (!bytesEqual(entry.record.previousEntry, previous.hash)) {
    throw new FederationLogError(
      'LOG_CHAIN_BROKEN',
      `log ${stream}: entry ${entry.sequence} does not chain to entry ${previous.sequence} (previousEntry differs from its hash)`,
      { details: { sequence: entry.sequence } },
    );
  }
}
