import {
  SIGNATURE_ALGORITHM_IDS,
  type SignatureAlgorithm,
  signatureAlgorithmFromId,
} from '../../crypto/signature/index.ts';
import { CanonicalWriter } from '../protocol/canonical-writer.ts';
import { CanonicalReader } from './canonical-reader.ts';
import { COMMIT_KINDS, type CommitKind, HASH_BYTES } from './commit.ts';
import { SnapshotError } from './snapshot-error.ts';

/** AES-256-GCM nonce bytes recorded in the header (random per snapshot). */
export const SNAPSHOT_NONCE_BYTES = 12;

/** Largest header a reader accepts (4 KiB); a real one is about 300 bytes. */
export const MAX_SNAPSHOT_HEADER_BYTES = 4096;

/** Largest UTF-8 length of the federation, signer and key id strings in a header. */
export const MAX_SNAPSHOT_ID_BYTES = 255;

/**
 * The signed, cleartext description of a snapshot. Everything here is public: the coordinator
 * reads and checks it without the data key.
 */
export interface SnapshotHeader {
  /** Federation id. */
  readonly federation: string;
  /** Hash of the commit whose model and strategy state the snapshot holds (32 bytes). */
  readonly commitHash: Uint8Array;
  /** Height of that commit. */
  readonly height: number;
  /** Round of that commit. */
  readonly round: number;
  /** Kind of that commit. */
  readonly kind: CommitKind;
  /** H(w) of the snapshot's parameters (`modelHash`, 32 bytes); equals the commit's `modelHash`. */
  readonly modelHash: Uint8Array;
  /** `strategyStateHash` of the snapshot's strategy state (32 bytes). */
  readonly stateHash: Uint8Array;
  /** Federation log sequence (≥ 1) of the record that committed the commit. */
  readonly logSequence: number;
  /** Number of float32 parameters in the model. */
  readonly parameterCount: number;
  /** Member id of the site that wrote and signed the snapshot. */
  readonly signer: string;
  /** Key id of the signer's signing key (32 lowercase hex characters). */
  readonly signerKeyId: string;
  /** Algorithm of the signer's key. */
  readonly signatureAlgorithm: SignatureAlgorithm;
  /** AES-256-GCM nonce (12 bytes). */
  readonly nonce: Uint8Array;
  /** Bytes of the AES-256-GCM ciphertext including its 16-byte tag. */
  readonly ciphertextLength: number;
  /** SHA-256 of those ciphertext bytes (tag included). */
  readonly ciphertextDigest: Uint8Array;
}

/** The header without the ciphertext digest: what AES-GCM binds as associated data. */
export type SnapshotHeaderFields = Omit<SnapshotHeader, 'ciphertextDigest'>;

/**
 * The canonical header bytes up to, not including, the ciphertext digest (`CanonicalWriter`:
 * big-endian integers, `str`/`bytes` with a u32 big-endian length prefix):
 *
 * `str(federation) ‖ bytes(commitHash) ‖ u64(height) ‖ u64(round) ‖ u8(kind id: 0 genesis, 1 round,
 * 2 rollback) ‖ bytes(modelHash) ‖ bytes(stateHash) ‖ u64(logSequence) ‖ u64(parameterCount) ‖
 * str(signer) ‖ str(signerKeyId) ‖ u8(signature algorithm id) ‖ bytes(nonce) ‖ u64(ciphertextLength)`.
 *
 * These bytes are the AES-GCM associated data. They cannot include the ciphertext digest, which
 * depends on the GCM tag, which depends on the associated data.
 */
export function encodeSnapshotHeaderFields(fields: SnapshotHeaderFields): Uint8Array {
  return new CanonicalWriter()
    .str(fields.federation)
    .bytes(fields.commitHash)
    .u64(fields.height)
    .u64(fields.round)
    .u8(COMMIT_KINDS.indexOf(fields.kind))
    .bytes(fields.modelHash)
    .bytes(fields.stateHash)
    .u64(fields.logSequence)
    .u64(fields.parameterCount)
    .str(fields.signer)
    .str(fields.signerKeyId)
    .u8(SIGNATURE_ALGORITHM_IDS[fields.signatureAlgorithm])
    .bytes(fields.nonce)
    .u64(fields.ciphertextLength)
    .finish();
}

/** The full header: `fieldBytes ‖ bytes(ciphertextDigest)` (u32 big-endian length 32, then the digest). */
export function appendCiphertextDigest(fieldBytes: Uint8Array, ciphertextDigest: Uint8Array): Uint8Array {
  const out = new Uint8Array(fieldBytes.length + 4 + ciphertextDigest.length);
  out.set(fieldBytes, 0);
  new DataView(out.buffer).setUint32(fieldBytes.length, ciphertextDigest.length, false);
  out.set(ciphertextDigest, fieldBytes.length + 4);
  return out;
}

/** A decoded header and how many of its leading bytes are the associated data. */
export interface DecodedSnapshotHeader {
  readonly header: SnapshotHeader;
  /** Length of the {@link encodeSnapshotHeaderFields} prefix (the header minus its digest field). */
  readonly fieldsLength: number;
}

/**
 * Inverse of {@link encodeSnapshotHeaderFields} + {@link appendCiphertextDigest} for untrusted
 * bytes: every field is bounds-checked, hashes must be 32 bytes and the nonce 12, strings
 * non-empty UTF-8 of at most 255 bytes, the kind and algorithm ids known, the commit shape sane
 * (genesis at height 0 and round 0, other kinds at height ≥ 1), the log sequence ≥ 1, and no byte
 * may follow the digest. Nothing here is authenticated yet: the caller verifies the signature.
 *
 * @throws SnapshotError `SNAPSHOT_MALFORMED` naming the field.
 */
export function decodeSnapshotHeader(bytes: Uint8Array): DecodedSnapshotHeader {
  const malformed = (message: string) =>
    new SnapshotError('SNAPSHOT_MALFORMED', `snapshot header: ${message}`);
  const r = new CanonicalReader(bytes, malformed);
  const federation = r.str('federation', MAX_SNAPSHOT_ID_BYTES);
  const commitHash = r.bytes('commit hash', { length: HASH_BYTES });
  const height = r.u64('height');
  const round = r.u64('round');
  const kindId = r.u8('commit kind');
  const kind = COMMIT_KINDS[kindId];
  if (kind === undefined)
    throw malformed(`commit kind id ${kindId}, known ids are 0–${COMMIT_KINDS.length - 1}`);
  const modelHash = r.bytes('model hash', { length: HASH_BYTES });
  const stateHash = r.bytes('state hash', { length: HASH_BYTES });
  const logSequence = r.u64('log sequence');
  const parameterCount = r.u64('parameter count');
  const signer = r.str('signer', MAX_SNAPSHOT_ID_BYTES);
  const signerKeyId = r.str('signer key id', MAX_SNAPSHOT_ID_BYTES);
  const algorithmId = r.u8('signature algorithm id');
  let signatureAlgorithm: SignatureAlgorithm;
  try {
    signatureAlgorithm = signatureAlgorithmFromId(algorithmId);
  } catch (cause) {
    throw new SnapshotError(
      'SNAPSHOT_MALFORMED',
      `snapshot header: signature algorithm id ${algorithmId} is unknown`,
      {
        cause,
      },
    );
  }
  const nonce = r.bytes('nonce', { length: SNAPSHOT_NONCE_BYTES });
  const ciphertextLength = r.u64('ciphertext length');
  const fieldsLength = r.offset;
  const ciphertextDigest = r.bytes('ciphertext digest', { length: HASH_BYTES });
  r.end('header');
  if (kind === 'genesis' ? height !== 0 || round !== 0 : height < 1) {
    throw malformed(`a ${kind} commit at height ${height}, round ${round} is impossible`);
  }
  if (logSequence < 1) throw malformed('log sequence 0; sequences start at 1');
  return {
    header: {
      federation,
      commitHash,
      height,
      round,
      kind,
      modelHash,
      stateHash,
      logSequence,
      parameterCount,
      signer,
      signerKeyId,
      signatureAlgorithm,
      nonce,
      ciphertextLength,
      ciphertextDigest,
    },
    fieldsLength,
  };
}
