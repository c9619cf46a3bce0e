import { crc32 as zlibCrc32 } from 'node:zlib';
import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';

/** Largest accepted chunk size in bytes for {@link chunkCrc32s} (1 GiB). */
export const MAX_CRC_CHUNK_SIZE = 2 ** 30;

/**
 * CRC-32 (IEEE 802.3 polynomial, as zlib computes it) of `bytes`, an unsigned 32-bit integer.
 * Detects transport corruption only; it is not a cryptographic check.
 */
export function crc32(bytes: Uint8Array): number {
  return zlibCrc32(bytes) >>> 0;
}

/**
 * One {@link crc32} per consecutive `chunkSize`-byte chunk of `bytes`; the last chunk may be
 * shorter. Empty input yields an empty list.
 *
 * @param chunkSize - bytes per chunk, an integer in [1, {@link MAX_CRC_CHUNK_SIZE}].
 * @returns `ceil(bytes.length / chunkSize)` CRCs, in chunk order.
 */
export function chunkCrc32s(bytes: Uint8Array, chunkSize: number): number[] {
  assertInteger('chunkSize', chunkSize, 1, MAX_CRC_CHUNK_SIZE);
  const crcs: number[] = [];
  for (let offset = 0; offset < bytes.length; offset += chunkSize) {
    crcs.push(crc32(bytes.subarray(offset, offset + chunkSize)));
  }
  return crcs;
}

/**
 * Checks `bytes` against per-chunk CRCs made by {@link chunkCrc32s} with the same `chunkSize`.
 *
 * @returns the index of the first chunk whose CRC differs; when every compared chunk matches but
 *   the number of CRCs differs from the number of chunks, `min(crcs.length, chunkCount)`; `-1`
 *   when everything matches.
 */
export function verifyChunkCrc32s(bytes: Uint8Array, chunkSize: number, crcs: readonly number[]): number {
  assertInteger('chunkSize', chunkSize, 1, MAX_CRC_CHUNK_SIZE);
  if (!Array.isArray(crcs)) {
    throw new InvalidArgumentError('crcs must be an array of numbers', { details: { name: 'crcs' } });
  }
  const chunkCount = Math.ceil(bytes.length / chunkSize);
  const compared = Math.min(chunkCount, crcs.length);
  for (let i = 0; i < compared; i++) {
    const offset = i * chunkSize;
    if (crc32(bytes.subarray(offset, offset + chunkSize)) !== crcs[i]) return i;
  }
  return chunkCount === crcs.length ? -1 : compared;
}
