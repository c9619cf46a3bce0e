import { crc32 } from 'node:zlib';
import type { TransportDropReason } from './drop-reason.ts';
import { TransportError } from './transport-error.ts';

/** Header names of Cohort's message framing; application headers may not use the `Cohort-` prefix. */
export const FRAME_HEADERS = Object.freeze({
  /** Message id (128 random bits, base64url), shared by every chunk and every retry of one message. */
  id: 'Cohort-Id',
  /** `<index>/<count>`, 0-based index. */
  chunk: 'Cohort-Chunk',
  /** Length in bytes of the whole message. */
  length: 'Cohort-Length',
  /** CRC32 of this chunk's bytes, 8 lowercase hex digits. */
  crc: 'Cohort-Crc',
  /** On a reply: `<CODE> <message>` of the error the remote handler threw. */
  error: 'Cohort-Error',
});

/** Prefix reserved for framing headers. */
export const RESERVED_HEADER_PREFIX = 'cohort-';

/** Bytes reserved in each chunk for the framing headers (NATS counts headers in `max_payload`). */
export const FRAME_HEADER_BUDGET = 256;

/** Smallest chunk a sender cuts (all but the last chunk of a message have this size or more). */
export const MIN_CHUNK_BYTES = 1024;

/** The framing headers of one chunk, read before its bytes are looked at. */
export interface ChunkHeader {
  /** Sender-chosen message id: not trusted, never a key on its own. */
  readonly id: string;
  readonly index: number;
  readonly count: number;
  readonly length: number;
  readonly crc: number;
}

/** One chunk as read off the wire. */
export interface ChunkFrame extends ChunkHeader {
  readonly data: Uint8Array;
}

/** Why a chunk is refused: a drop reason and a description (no payload bytes). */
export class FrameFault {
  readonly reason: TransportDropReason;
  readonly problem: string;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(reason: TransportDropReason, problem: string, details: Readonly<Record<string, unknown>> = {}) {
    this.reason = reason;
    this.problem = problem;
    this.details = details;
  }

  /** The `TRANSPORT_CHUNK` error reported for this fault on `subject`. */
  toError(subject: string): TransportError {
    return new TransportError('TRANSPORT_CHUNK', `message on ${subject}: ${this.problem}`, {
      details: { subject, reason: this.reason, ...this.details },
    });
  }
}

/** CRC32 of `data` as 8 lowercase hex digits. */
export function crcHex(data: Uint8Array): string {
  return crc32(data).toString(16).padStart(8, '0');
}

/** Cuts `data` into views of at most `chunkSize` bytes; an empty payload is one empty chunk. */
export function splitChunks(data: Uint8Array, chunkSize: number): Uint8Array[] {
  if (data.length === 0) return [data];
  const out: Uint8Array[] = [];
  for (let off = 0; off < data.length; off += chunkSize) {
    out.push(data.subarray(off, Math.min(off + chunkSize, data.length)));
  }
  return out;
}

const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const CHUNK_PATTERN = /^(\d{1,9})\/(\d{1,9})$/;
const LENGTH_PATTERN = /^\d{1,15}$/;
const CRC_PATTERN = /^[0-9a-f]{8}$/;

/**
 * Step 1 of the checks on a chunk (string work only): reads and validates the framing headers
 * against the chunk's size. `FRAME_MALFORMED` when a header is missing or malformed, the index is
 * out of range, or the chunk holds more bytes than the whole message.
 */
export function readChunkHeader(get: (name: string) => string, dataLength: number): ChunkHeader | FrameFault {
  const id = get(FRAME_HEADERS.id);
  if (!ID_PATTERN.test(id)) {
    return new FrameFault('FRAME_MALFORMED', `missing or malformed ${FRAME_HEADERS.id} header`);
  }
  const m = CHUNK_PATTERN.exec(get(FRAME_HEADERS.chunk));
  const lengthText = get(FRAME_HEADERS.length);
  const crcText = get(FRAME_HEADERS.crc);
  if (!m || !LENGTH_PATTERN.test(lengthText) || !CRC_PATTERN.test(crcText)) {
    return new FrameFault('FRAME_MALFORMED', 'missing or malformed framing headers', { id });
  }
  const index = Number(m[1]);
  const count = Number(m[2]);
  const length = Number(lengthText);
  if (count < 1 || index >= count || dataLength > length) {
    return new FrameFault(
      'FRAME_MALFORMED',
      `inconsistent framing (chunk ${index}/${count}, length ${length})`,
      {
        id,
        index,
        count,
        length,
      },
    );
  }
  return { id, index, count, length, crc: Number.parseInt(crcText, 16) };
}

/**
 * Step 2: the declared length against the receiver's cap (`OVERSIZE`), then the declared count
 * against the declared length (`FRAME_MALFORMED`): one chunk for an empty message, at most one
 * chunk per byte, and at most `ceil(maxMessageBytes / MIN_CHUNK_BYTES)` chunks. Nothing is ever
 * allocated from the declared count.
 */
export function checkDeclaredSize(h: ChunkHeader, maxMessageBytes: number): FrameFault | undefined {
  if (h.length > maxMessageBytes) {
    return new FrameFault('OVERSIZE', `declares ${h.length} bytes, limit ${maxMessageBytes}`, {
      id: h.id,
      length: h.length,
      maxMessageBytes,
    });
  }
  const maxCount = Math.max(1, Math.min(h.length, Math.ceil(maxMessageBytes / MIN_CHUNK_BYTES)));
  if (h.count > maxCount) {
    return new FrameFault('FRAME_MALFORMED', `declares ${h.count} chunks for ${h.length} bytes`, {
      id: h.id,
      count: h.count,
      length: h.length,
      maxCount,
    });
  }
  return undefined;
}

/** Step 4 (after the rate limit): the chunk's CRC32 (`CRC_MISMATCH`). */
export function checkChunkCrc(h: ChunkHeader, data: Uint8Array): FrameFault | undefined {
  const actual = crc32(data);
  if (actual === h.crc) return undefined;
  return new FrameFault('CRC_MISMATCH', `chunk ${h.index}/${h.count} failed its CRC32`, {
    id: h.id,
    index: h.index,
    count: h.count,
    expected: h.crc.toString(16).padStart(8, '0'),
    actual: actual.toString(16).padStart(8, '0'),
  });
}

/**
 * Reads the framing headers of one chunk, checks its declared size against `maxMessageBytes` and
 * its CRC32, in that order. Throws `TRANSPORT_CHUNK` (with `details.reason`, a drop reason) when
 * a check fails.
 */
export function parseChunkFrame(
  subject: string,
  get: (name: string) => string,
  data: Uint8Array,
  maxMessageBytes: number,
): ChunkFrame {
  const h = readChunkHeader(get, data.length);
  if (h instanceof FrameFault) throw h.toError(subject);
  const fault = checkDeclaredSize(h, maxMessageBytes) ?? checkChunkCrc(h, data);
  if (fault !== undefined) throw fault.toError(subject);
  return { ...h, data };
}
