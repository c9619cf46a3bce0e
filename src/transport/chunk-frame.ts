import { crc32 } from 'node:zlib';
import { TransportError } from './transport-error.ts';

/** Header names of Cohort's message framing; application headers may not use the `Cohort-` prefix. */
export const FRAME_HEADERS = Object.freeze({
  /** Message id (a NUID), shared by every chunk and every retry of one message. */
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

/** One chunk as read off the wire. */
export interface ChunkFrame {
  readonly id: string;
  readonly index: number;
  readonly count: number;
  readonly length: number;
  readonly crc: number;
  readonly data: Uint8Array;
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

function chunkError(subject: string, problem: string, details: Record<string, unknown> = {}): TransportError {
  return new TransportError('TRANSPORT_CHUNK', `message on ${subject}: ${problem}`, {
    details: { subject, ...details },
  });
}

/**
 * Reads the framing headers of one chunk and checks its CRC32. Throws `TRANSPORT_CHUNK` when a
 * header is missing or malformed, or the CRC does not match.
 */
export function parseChunkFrame(
  subject: string,
  get: (name: string) => string,
  data: Uint8Array,
  maxMessageBytes: number,
): ChunkFrame {
  const id = get(FRAME_HEADERS.id);
  if (!ID_PATTERN.test(id)) throw chunkError(subject, `missing or malformed ${FRAME_HEADERS.id} header`);
  const m = /^(\d{1,9})\/(\d{1,9})$/.exec(get(FRAME_HEADERS.chunk));
  const length = /^\d{1,15}$/.test(get(FRAME_HEADERS.length)) ? Number(get(FRAME_HEADERS.length)) : -1;
  const crcText = get(FRAME_HEADERS.crc);
  if (!m || length < 0 || !/^[0-9a-f]{8}$/.test(crcText)) {
    throw chunkError(subject, 'missing or malformed framing headers', { id });
  }
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1 || index >= count || length > maxMessageBytes || data.length > length) {
    throw chunkError(subject, `inconsistent framing (chunk ${index}/${count}, length ${length})`, {
      id,
      index,
      count,
      length,
      maxMessageBytes,
    });
  }
  const crc = Number.parseInt(crcText, 16);
  const actual = crc32(data);
  if (actual !== crc) {
    throw chunkError(subject, `chunk ${index}/${count} failed its CRC32`, {
      id,
      index,
      count,
      expected: crcText,
      actual: actual.toString(16).padStart(8, '0'),
    });
  }
  return { id, index, count, length, crc, data };
}
