import { sha256 } from '../../crypto/digest/index.ts';
import { BlockRejectedError } from '../errors/index.ts';
import { type KeyLookup, type LogRecordBody, openControl } from '../protocol/index.ts';
import {
  ENTRY_HASH_BYTES,
  LOG_MAX_ENTRY_BYTES,
  type LogEntry,
  openLogEntry,
  recordKind,
  recordsHeld,
} from '../services/federation-log/index.ts';
import type { AuditProblemCode } from './audit-report.ts';

/** Record kinds whose content the audit checks; any other is counted as `UNCHECKED_KIND`. */
export const AUDITED_RECORD_KINDS: ReadonlySet<string> = new Set([
  'roundOpen',
  'decision',
  'snapshot',
  'registryChange',
  'adminAction',
  'partial',
  'vote',
  'votes',
]);

/** What opening one stored entry gave. */
export type OpenedEntry =
  | {
      readonly ok: true;
      readonly entry: LogEntry;
      /** Whether its record is of a kind in {@link AUDITED_RECORD_KINDS}. */
      readonly audited: boolean;
    }
  | {
      readonly ok: false;
      readonly code: Extract<
        AuditProblemCode,
        'FRAME_MALFORMED' | 'SIGNATURE_INVALID' | 'ENTRY_INVALID' | 'SEQUENCE_MISMATCH'
      >;
      readonly message: string;
    };

/** Where entries are opened: the federation, its log stream, the coordinator and its key in force. */
export interface OpenEntryOptions {
  readonly federation: string;
  readonly stream: string;
  readonly coordinator: string;
  readonly keys: KeyLookup;
}

const FRAME_REASONS: ReadonlySet<string> = new Set(['OVERSIZE', 'MALFORMED', 'TRUNCATED']);

/**
 * Opens the bytes stored at `sequence` with the federation log's own checks (`openLogEntry`: size
 * cap, frame, envelope, the coordinator's signature with the key `keys` gives now, federation,
 * claimed sequence, one record), classifying a refusal by its cause: frame or protobuf
 * (`FRAME_MALFORMED`), signer or signature (`SIGNATURE_INVALID`), a signed entry claiming another
 * sequence (`SEQUENCE_MISMATCH`), anything else (`ENTRY_INVALID`). The size cap,
 * {@link LOG_MAX_ENTRY_BYTES}, is checked before anything is decoded.
 *
 * A signed record holding none of the kinds this build knows (a newer kind, which protobuf skips as
 * an unknown field) is opened with `audited: false` when its federation, sequence and
 * `previous_entry` are well-formed: its signature and link are checked, its content is not.
 */
export function openStoredEntry(sequence: number, bytes: Uint8Array, opts: OpenEntryOptions): OpenedEntry {
  if (bytes.length > LOG_MAX_ENTRY_BYTES) {
    return {
      ok: false,
      code: 'FRAME_MALFORMED',
      message: `entry of ${bytes.length} bytes, more than the log's ${LOG_MAX_ENTRY_BYTES}`,
    };
  }
  const logOpts = { ...opts };
  let first: Error;
  try {
    const entry = openLogEntry(bytes, sequence, logOpts);
    return { ok: true, entry, audited: AUDITED_RECORD_KINDS.has(recordKind(entry.record)) };
  } catch (err) {
    first = err as Error;
  }
  const cause = (first as { cause?: unknown }).cause;
  if (cause instanceof BlockRejectedError) {
    return {
      ok: false,
      code: FRAME_REASONS.has(cause.reason) ? 'FRAME_MALFORMED' : 'SIGNATURE_INVALID',
      message: first.message,
    };
  }
  // Signed by the coordinator: is it well-formed at another sequence, or of a newer kind?
  try {
    openLogEntry(bytes, undefined, logOpts);
    return { ok: false, code: 'SEQUENCE_MISMATCH', message: first.message };
  } catch {
    // not merely misplaced
  }
  const record = newerKind(bytes, opts);
  if (record === null) return { ok: false, code: 'ENTRY_INVALID', message: first.message };
  if (record.sequence !== sequence) {
    return {
      ok: false,
      code: 'SEQUENCE_MISMATCH',
      message: `log ${opts.stream} entry ${sequence}: claims sequence ${record.sequence}`,
    };
  }
  return { ok: true, entry: { sequence, bytes, hash: sha256(bytes), record }, audited: false };
}

/** The record of a signed entry holding no record of a known kind, well-formed otherwise; else null. */
function newerKind(bytes: Uint8Array, opts: OpenEntryOptions): LogRecordBody | null {
  let record: LogRecordBody;
  try {
    record = openControl(bytes, 'log-record', opts.keys, { signer: opts.coordinator }).body;
  } catch {
    return null;
  }
  if (recordsHeld(record) > 0) return null;
  if (record.federation !== opts.federation) return null;
  if (!Number.isSafeInteger(record.sequence) || record.sequence < 1) return null;
  if (!(record.previousEntry instanceof Uint8Array) || record.previousEntry.length !== ENTRY_HASH_BYTES) {
    return null;
  }
  return record;
}
