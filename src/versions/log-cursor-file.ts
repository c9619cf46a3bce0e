import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { HASH_BYTES } from './commit.ts';
import { envelopeHeader, openEnvelope } from './file-envelope.ts';
import { VersionError } from './version-error.ts';

/** Magic of `log-cursor.bin` ("Cohort LoG Cursor"). */
export const LOG_CURSOR_FILE_MAGIC = 'CLGC';

/** Payload bytes of a log cursor file: u64 sequence and the entry hash. */
const PAYLOAD_BYTES = 8 + HASH_BYTES;

/** Where a site stands in the federation's log: the last entry it applied. */
export interface LogCursor {
  /** The entry's sequence number in the log, a safe integer ≥ 0. */
  readonly sequence: number;
  /** The entry's hash (32 bytes), which chains it to the entries before it. */
  readonly entryHash: Uint8Array;
}

/** Throws `INVALID_ARGUMENT` naming `name.sequence` or `name.entryHash` unless `cursor` is a {@link LogCursor}. */
export function assertLogCursor(name: string, cursor: LogCursor): void {
  if (typeof cursor !== 'object' || cursor === null) {
    throw new InvalidArgumentError(`${name} must be an object`, { details: { name } });
  }
  assertInteger(`${name}.sequence`, cursor.sequence, 0, Number.MAX_SAFE_INTEGER);
  if (!(cursor.entryHash instanceof Uint8Array) || cursor.entryHash.length !== HASH_BYTES) {
    throw new InvalidArgumentError(`${name}.entryHash must be a ${HASH_BYTES}-byte Uint8Array`, {
      details: { name: `${name}.entryHash` },
    });
  }
}

/**
 * The parts of `log-cursor.bin`: an envelope (magic "CLGC", length in bytes, SHA-256) around
 * `u64 sequence (little-endian) ‖ entryHash (32)`. The cursor must satisfy {@link assertLogCursor}.
 */
export function logCursorFileParts(cursor: LogCursor): Uint8Array[] {
  const payload = new Uint8Array(PAYLOAD_BYTES);
  new DataView(payload.buffer).setBigUint64(0, BigInt(cursor.sequence), true);
  payload.set(cursor.entryHash, 8);
  return [envelopeHeader(LOG_CURSOR_FILE_MAGIC, [payload], 1), payload];
}

/**
 * Inverse of {@link logCursorFileParts}; the entry hash is a fresh array.
 *
 * @throws VersionError `STORE_CORRUPT` naming `path` (bad envelope, payload length, sequence
 *   above 2^53 − 1).
 */
export function readLogCursorFile(bytes: Uint8Array, path: string): LogCursor {
  const payload = openEnvelope(bytes, LOG_CURSOR_FILE_MAGIC, 1, path);
  const corrupt = (problem: string): VersionError =>
    new VersionError('STORE_CORRUPT', `${path}: ${problem}`, { details: { path } });
  if (payload.length !== PAYLOAD_BYTES)
    throw corrupt(`payload length ${payload.length}, expects ${PAYLOAD_BYTES}`);
  const sequence = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getBigUint64(0, true);
  if (sequence > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt(`sequence ${sequence} exceeds 2^53 − 1`);
  return { sequence: Number(sequence), entryHash: payload.slice(8) };
}
