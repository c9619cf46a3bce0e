import { constants as bufferConstants } from 'node:buffer';
import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import { type AggregateInfo, updateLayout } from '../protocol/index.ts';
import { decodeAggregateObject } from '../round/index.ts';
import { bytesToHex } from '../versions/index.ts';
import type { AuditAggregateStatus, AuditProblem, AuditUnchecked } from './audit-report.ts';
import type { AggregateRead, AuditSource } from './audit-source.ts';

/** What checking one COMMIT's aggregate concluded. */
export interface AggregateCheck {
  readonly status: AuditAggregateStatus;
  /** The stored object, when verified (for the recomputation). */
  readonly bytes?: Uint8Array;
  readonly problem?: AuditProblem;
  readonly unchecked?: AuditUnchecked;
}

/**
 * Blocks a stored aggregate of `info` holds: one ciphertext per block of its slots (the
 * parameters' slots, then the aggregate MAC's limbs: `updateLayout`), as every hop's
 * `BlockVerifier` counts them.
 */
export function expectedAggregateBlocks(info: AggregateInfo): number {
  return updateLayout(info.totalParams, info.encoding).blocks;
}

/**
 * Checks the aggregate a COMMIT at log `sequence` names (`info`, `digest`) against what `source`
 * stores: the object must exist (`AGGREGATE_MISSING`), the store's record of it be consistent
 * (`AGGREGATE_CORRUPT`), its SHA-256 be `digest` (`AGGREGATE_DIGEST_MISMATCH`), and its size be
 * `info.objectBytes` and its content `u32(count) ‖ (u32(length) ‖ ciphertext)*` with
 * {@link expectedAggregateBlocks} non-empty ciphertexts (`AGGREGATE_SIZE_MISMATCH`). An object
 * larger than `info.objectBytes` is refused before it is read. An object that cannot be read is
 * `AGGREGATE_UNREADABLE` (unchecked, not a problem).
 */
export async function checkAggregate(
  source: AuditSource,
  sequence: number,
  info: AggregateInfo,
  digest: Uint8Array,
): Promise<AggregateCheck> {
  const name = info.object;
  const at = `aggregate ${JSON.stringify(name)}`;
  const problem = (code: AuditProblem['code'], message: string): AggregateCheck => ({
    status: 'problem',
    problem: { sequence, code, message: `${at}: ${message}` },
  });
  const maxBytes = Math.min(Math.max(0, info.objectBytes), bufferConstants.MAX_LENGTH);
  let read: AggregateRead;
  try {
    read = await source.aggregate(name, maxBytes);
  } catch (err) {
    read = { status: 'unavailable', reason: (err as Error).message };
  }
  switch (read.status) {
    case 'unavailable':
      return {
        status: 'unchecked',
        unchecked: { sequence, code: 'AGGREGATE_UNREADABLE', message: `${at}: ${read.reason}` },
      };
    case 'absent':
      return problem('AGGREGATE_MISSING', 'the aggregate store holds no such object');
    case 'corrupt':
      return problem('AGGREGATE_CORRUPT', read.reason);
    case 'too-large':
      return problem(
        'AGGREGATE_SIZE_MISMATCH',
        `larger than the ${info.objectBytes} bytes the decision names (${read.reason})`,
      );
    case 'found':
      break;
  }
  const bytes = read.bytes;
  const actual = sha256(bytes);
  if (!bytesEqual(actual, digest)) {
    return problem(
      'AGGREGATE_DIGEST_MISMATCH',
      `SHA-256 ${bytesToHex(actual)}, the decision's aggregate_digest is ${bytesToHex(digest)}`,
    );
  }
  if (bytes.length !== info.objectBytes) {
    return problem(
      'AGGREGATE_SIZE_MISMATCH',
      `${bytes.length} bytes, the decision names ${info.objectBytes}`,
    );
  }
  let blocks: Uint8Array[];
  try {
    blocks = decodeAggregateObject(bytes);
  } catch (err) {
    return problem(
      'AGGREGATE_SIZE_MISMATCH',
      `not u32(count) ‖ (u32(length) ‖ ciphertext)*: ${(err as Error).message}`,
    );
  }
  const expected = expectedAggregateBlocks(info);
  if (blocks.length !== expected) {
    return problem(
      'AGGREGATE_SIZE_MISMATCH',
      `${blocks.length} ciphertexts, ${info.totalParams} parameters at ${info.encoding.bits} bits (${info.encoding.paramsPerBlock} lanes a block, ${info.participants} participants) need ${expected}`,
    );
  }
  const empty = blocks.findIndex((b) => b.length === 0);
  if (empty >= 0) return problem('AGGREGATE_SIZE_MISMATCH', `ciphertext ${empty} is empty`);
  return { status: 'verified', bytes };
}
