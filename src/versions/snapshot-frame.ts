import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import { type PublicSigningKey, verify } from '../../crypto/signature/index.ts';
import { STRATEGY_STATE_HEADER_BYTES } from '../../federation/strategy/index.ts';
import type { KeyLookup } from '../protocol/block-verifier.ts';
import { bytesToHex } from './hex.ts';
import { SNAPSHOT_TAG_BYTES } from './snapshot-cipher.ts';
import { SnapshotError } from './snapshot-error.ts';
import { decodeSnapshotHeader, MAX_SNAPSHOT_HEADER_BYTES, type SnapshotHeader } from './snapshot-header.ts';

// The snapshot frame (layout in `encodeSnapshot`'s TSDoc) and its verification without the data key.

/** Signature domain of a snapshot: the signer signs `signingMessage('model-snapshot', header)`. */
export const SNAPSHOT_SIGNING_DOMAIN = 'model-snapshot';

/** Magic of a snapshot ("COHort Snapshot"). */
export const SNAPSHOT_MAGIC = 'COHS';

/** Format version `encodeSnapshot` writes; the only one `readSnapshotHeader` reads. */
export const SNAPSHOT_FORMAT_VERSION = 1;

/** Bytes before the header: magic (4), version (1), reserved (3), header length (4). */
export const SNAPSHOT_PREFIX_BYTES = 12;

/** Largest signature a reader accepts (ML-DSA-65 signatures are 3309 bytes, Falcon-512 at most 666). */
export const MAX_SNAPSHOT_SIGNATURE_BYTES = 8192;

/** Bytes of the u32 little-endian state length that starts the plaintext. */
export const SNAPSHOT_STATE_LENGTH_BYTES = 4;

/** The magic as bytes. Exported for `snapshot.ts` only. */
export const SNAPSHOT_MAGIC_BYTES: Uint8Array = new TextEncoder().encode(SNAPSHOT_MAGIC);

/** A verified snapshot's header, associated data and sealed bytes (views into the input). */
export interface VerifiedSnapshot {
  readonly header: SnapshotHeader;
  readonly fieldBytes: Uint8Array;
  readonly sealed: Uint8Array;
}

/** A snapshot's frame, parsed and checked for shape only: nothing in it is authenticated yet. */
export interface SnapshotFrame {
  readonly header: SnapshotHeader;
  /** The whole header (what the signature covers). */
  readonly headerBytes: Uint8Array;
  /** Length of the header's leading fields (the AES-GCM associated data). */
  readonly fieldsLength: number;
  readonly signature: Uint8Array;
  /** Ciphertext ‖ tag. */
  readonly sealed: Uint8Array;
}

/**
 * The most bytes an honest snapshot of a model of `parameterCount` parameters can take: prefix,
 * the largest header and signature a reader accepts, and the ciphertext with one moment vector
 * pair (FedAdam, FedYogi) per parameter. A subscription or a reader caps snapshots at this before
 * anything is buffered or parsed.
 */
export function maxSnapshotBytes(parameterCount: number): number {
  return (
    SNAPSHOT_PREFIX_BYTES +
    MAX_SNAPSHOT_HEADER_BYTES +
    4 +
    MAX_SNAPSHOT_SIGNATURE_BYTES +
    SNAPSHOT_TAG_BYTES +
    SNAPSHOT_STATE_LENGTH_BYTES +
    STRATEGY_STATE_HEADER_BYTES +
    12 * parameterCount
  );
}

/**
 * The keyless checks of `readSnapshotHeader` that need no key and no hash, in its order: total
 * size against `maxBytes` (before any parsing), magic, version and reserved bytes, header and
 * signature lengths, header fields, the ciphertext length against the header and against
 * `parameterCount`. On already-asserted arguments.
 *
 * @throws SnapshotError `SNAPSHOT_TOO_LARGE` or `SNAPSHOT_MALFORMED`.
 */
export function readFrame(bytes: Uint8Array, maxBytes: number): SnapshotFrame {
  if (bytes.length > maxBytes) {
    throw new SnapshotError(
      'SNAPSHOT_TOO_LARGE',
      `snapshot is ${bytes.length} bytes, the limit is ${maxBytes}`,
      {
        details: { bytes: bytes.length, maxBytes },
      },
    );
  }
  const malformed = (message: string) => new SnapshotError('SNAPSHOT_MALFORMED', `snapshot ${message}`);
  if (bytes.length < SNAPSHOT_PREFIX_BYTES) {
    throw malformed(`is ${bytes.length} bytes, the prefix alone is ${SNAPSHOT_PREFIX_BYTES} (truncated)`);
  }
  if (SNAPSHOT_MAGIC_BYTES.some((b, i) => bytes[i] !== b))
    throw malformed(`does not start with the magic "${SNAPSHOT_MAGIC}"`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint8(4);
  if (version !== SNAPSHOT_FORMAT_VERSION) {
    throw malformed(`format version ${version}, this build reads ${SNAPSHOT_FORMAT_VERSION}`);
  }
  if (bytes[5] !== 0 || bytes[6] !== 0 || bytes[7] !== 0) throw malformed('reserved bytes are not 0');
  const headerLength = view.getUint32(8, false);
  if (headerLength > MAX_SNAPSHOT_HEADER_BYTES) {
    throw malformed(`header length ${headerLength} exceeds ${MAX_SNAPSHOT_HEADER_BYTES}`);
  }
  const signatureAt = SNAPSHOT_PREFIX_BYTES + headerLength;
  if (signatureAt + 4 > bytes.length) {
    throw malformed(`is ${bytes.length} bytes, too short for a ${headerLength}-byte header (truncated)`);
  }
  const signatureLength = view.getUint32(signatureAt, false);
  if (signatureLength === 0 || signatureLength > MAX_SNAPSHOT_SIGNATURE_BYTES) {
    throw malformed(`signature length ${signatureLength}, expects 1 to ${MAX_SNAPSHOT_SIGNATURE_BYTES}`);
  }
  const sealedAt = signatureAt + 4 + signatureLength;
  if (sealedAt > bytes.length) {
    throw malformed(
      `is ${bytes.length} bytes, too short for a ${signatureLength}-byte signature (truncated)`,
    );
  }
  const headerBytes = bytes.subarray(SNAPSHOT_PREFIX_BYTES, signatureAt);
  const { header, fieldsLength } = decodeSnapshotHeader(headerBytes);
  const sealed = bytes.subarray(sealedAt);
  if (sealed.length !== header.ciphertextLength) {
    throw malformed(
      `ciphertext is ${sealed.length} bytes, the header says ${header.ciphertextLength}${sealed.length < header.ciphertextLength ? ' (truncated)' : ''}`,
    );
  }
  assertCiphertextFits(header);
  return {
    header,
    headerBytes,
    fieldsLength,
    signature: bytes.subarray(signatureAt + 4, sealedAt),
    sealed,
  };
}

/**
 * The keyless checks of `readSnapshotHeader`, in its order, on already-asserted arguments; also
 * returns what decryption needs. `fieldBytes` is the associated data (the header minus its digest
 * field) and `sealed` the ciphertext ‖ tag.
 *
 * @throws SnapshotError `SNAPSHOT_TOO_LARGE`, `SNAPSHOT_MALFORMED`, `SNAPSHOT_WRONG_SIGNER`,
 *   `SNAPSHOT_DIGEST_MISMATCH` or `SNAPSHOT_BAD_SIGNATURE`.
 */
export function readVerified(bytes: Uint8Array, keys: KeyLookup, maxBytes: number): VerifiedSnapshot {
  const { header, headerBytes, fieldsLength, signature, sealed } = readFrame(bytes, maxBytes);
  const key: PublicSigningKey | undefined = keys(header.signer);
  if (key === undefined) {
    throw new SnapshotError(
      'SNAPSHOT_WRONG_SIGNER',
      `snapshot signer ${JSON.stringify(header.signer)} is not in the key registry`,
      { details: { signer: header.signer } },
    );
  }
  if (key.keyId !== header.signerKeyId || key.algorithm !== header.signatureAlgorithm) {
    throw new SnapshotError(
      'SNAPSHOT_WRONG_SIGNER',
      `snapshot signer ${JSON.stringify(header.signer)} used key ${header.signerKeyId} (${header.signatureAlgorithm}); ` +
        `the registry has ${key.keyId} (${key.algorithm})`,
      { details: { signer: header.signer, keyId: header.signerKeyId } },
    );
  }
  const digest = sha256(sealed);
  if (!bytesEqual(digest, header.ciphertextDigest)) {
    throw new SnapshotError(
      'SNAPSHOT_DIGEST_MISMATCH',
      `snapshot ciphertext hashes to ${bytesToHex(digest)}, the header says ${bytesToHex(header.ciphertextDigest)}`,
    );
  }
  if (!verify(key, SNAPSHOT_SIGNING_DOMAIN, headerBytes, signature)) {
    throw new SnapshotError(
      'SNAPSHOT_BAD_SIGNATURE',
      `snapshot signature of ${JSON.stringify(header.signer)} does not verify over the header`,
      { details: { signer: header.signer } },
    );
  }
  return { header, fieldBytes: headerBytes.subarray(0, fieldsLength), sealed };
}

/**
 * C = tag (16) + state length (4) + state (20 + 8n) + 4·parameterCount, with n ∈ {0, parameterCount}
 * (strategy-state codec v1: stateless rules keep no moments, FedAdam/FedYogi one per parameter).
 */
function assertCiphertextFits(header: SnapshotHeader): void {
  const fixed = SNAPSHOT_TAG_BYTES + SNAPSHOT_STATE_LENGTH_BYTES + STRATEGY_STATE_HEADER_BYTES;
  const p = header.parameterCount;
  const withoutMoments = fixed + 4 * p;
  const withMoments = fixed + 12 * p;
  if (header.ciphertextLength !== withoutMoments && header.ciphertextLength !== withMoments) {
    throw new SnapshotError(
      'SNAPSHOT_MALFORMED',
      `snapshot ciphertext length ${header.ciphertextLength} does not fit ${p} parameters ` +
        `(expects ${withoutMoments} without strategy moments or ${withMoments} with them)`,
      { details: { ciphertextLength: header.ciphertextLength, parameterCount: p } },
    );
  }
}
