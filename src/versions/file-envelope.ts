import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import { VersionError } from './version-error.ts';

/** Format version of every enveloped store file. */
export const ENVELOPE_FORMAT_VERSION = 1;

/** Bytes of the envelope header. */
export const ENVELOPE_HEADER_BYTES = 48;

/**
 * Header of a checked store file, little-endian:
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | magic (ASCII, per file kind) |
 * | 4 | 1 | format version (1) |
 * | 5 | 3 | reserved, 0 |
 * | 8 | 8 | length, uint64: payload length in units of `unitBytes` (float32 count for models) |
 * | 16 | 32 | SHA-256 of the payload |
 * | 48 | … | payload |
 *
 * `payload` is the concatenation of its parts; it is not part of the returned array, so a large
 * model is written without a copy.
 */
export function envelopeHeader(magic: string, payload: readonly Uint8Array[], unitBytes: number): Uint8Array {
  let length = 0;
  for (const part of payload) length += part.length;
  const header = new Uint8Array(ENVELOPE_HEADER_BYTES);
  const view = new DataView(header.buffer);
  header.set(magicBytes(magic), 0);
  view.setUint8(4, ENVELOPE_FORMAT_VERSION);
  view.setBigUint64(8, BigInt(length / unitBytes), true);
  header.set(sha256(...payload), 16);
  return header;
}

/**
 * The payload of an enveloped file after checking magic, version, reserved bytes, length and
 * checksum. Returns a view into `bytes`.
 *
 * @throws VersionError `STORE_CORRUPT` naming `path` and what failed.
 */
export function openEnvelope(bytes: Uint8Array, magic: string, unitBytes: number, path: string): Uint8Array {
  const corrupt = (problem: string): VersionError =>
    new VersionError('STORE_CORRUPT', `${path}: ${problem}`, { details: { path } });
  if (bytes.length < ENVELOPE_HEADER_BYTES) {
    throw corrupt(`length ${bytes.length}, the header alone is ${ENVELOPE_HEADER_BYTES}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const expectedMagic = magicBytes(magic);
  if (expectedMagic.some((b, i) => bytes[i] !== b)) throw corrupt(`does not start with the magic "${magic}"`);
  const version = view.getUint8(4);
  if (version !== ENVELOPE_FORMAT_VERSION) {
    throw corrupt(`format version ${version}, this build reads ${ENVELOPE_FORMAT_VERSION}`);
  }
  if (bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) throw corrupt('reserved bytes are not 0');
  const units = view.getBigUint64(8, true);
  const expected = BigInt(ENVELOPE_HEADER_BYTES) + units * BigInt(unitBytes);
  if (BigInt(bytes.length) !== expected) throw corrupt(`length ${bytes.length}, header says ${expected}`);
  const payload = bytes.subarray(ENVELOPE_HEADER_BYTES);
  if (!bytesEqual(sha256(payload), bytes.subarray(16, ENVELOPE_HEADER_BYTES))) {
    throw corrupt('payload SHA-256 does not match the header');
  }
  return payload;
}

function magicBytes(magic: string): Uint8Array {
  const bytes = new TextEncoder().encode(magic);
  if (bytes.length !== 4) throw new RangeError(`envelope magic must be 4 ASCII bytes, got "${magic}"`);
  return bytes;
}
