import { randomBytes } from 'node:crypto';
import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import { type SigningKeyPair, sign } from '../../crypto/signature/index.ts';
import {
  assertStrategyState,
  decodeStrategyState,
  encodeStrategyState,
  type StrategyState,
} from '../../federation/strategy/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import type { KeyLookup } from '../protocol/block-verifier.ts';
import { type Commit, HASH_BYTES, verifyCommit } from './commit.ts';
import { float32ToLeBytes, leBytesToFloat32 } from './float32-le.ts';
import { bytesToHex } from './hex.ts';
import { modelHash } from './model-hash.ts';
import { assertDataKey, openSealed, SNAPSHOT_TAG_BYTES, sealParts } from './snapshot-cipher.ts';
import { SnapshotError } from './snapshot-error.ts';
import {
  readFrame,
  readVerified,
  SNAPSHOT_FORMAT_VERSION,
  SNAPSHOT_MAGIC_BYTES,
  SNAPSHOT_PREFIX_BYTES,
  SNAPSHOT_SIGNING_DOMAIN,
  SNAPSHOT_STATE_LENGTH_BYTES,
  type VerifiedSnapshot,
} from './snapshot-frame.ts';
import {
  appendCiphertextDigest,
  encodeSnapshotHeaderFields,
  MAX_SNAPSHOT_HEADER_BYTES,
  MAX_SNAPSHOT_ID_BYTES,
  SNAPSHOT_NONCE_BYTES,
  type SnapshotHeader,
} from './snapshot-header.ts';
import { strategyStateBytesHash } from './strategy-state-hash.ts';

export {
  MAX_SNAPSHOT_SIGNATURE_BYTES,
  maxSnapshotBytes,
  SNAPSHOT_FORMAT_VERSION,
  SNAPSHOT_MAGIC,
  SNAPSHOT_PREFIX_BYTES,
  SNAPSHOT_SIGNING_DOMAIN,
} from './snapshot-frame.ts';

/** What {@link encodeSnapshot} writes. */
export interface SnapshotInput {
  /** Federation id (non-empty, at most 255 UTF-8 bytes). */
  readonly federation: string;
  /** The committed version the snapshot captures; its hash must verify. */
  readonly commit: Commit;
  /** Federation log sequence (≥ 1) of the record that committed `commit`. */
  readonly logSequence: number;
  /** The commit's model: `modelHash(parameters)` must equal `commit.modelHash`. Not modified. */
  readonly parameters: Float32Array;
  /** The server strategy state after `commit` (moments of `parameters.length`, or none). */
  readonly strategyState: StrategyState;
  /** The federation data key (32 bytes). Not modified; the caller keeps and wipes it. */
  readonly dataKey: Uint8Array;
  /** Member id of the writing site (non-empty, at most 255 UTF-8 bytes). */
  readonly signer: string;
  /** The writing site's signing key; its key id and algorithm go into the header. */
  readonly signing: SigningKeyPair;
}

/** Reader limits. */
export interface SnapshotLimits {
  /** Largest snapshot accepted, in bytes; checked before anything is parsed. */
  readonly maxBytes: number;
}

/** What {@link openSnapshot} checks a snapshot against (the federation log's record of the commit). */
export interface SnapshotExpectation {
  readonly federation: string;
  /** The commit the caller wants (32 bytes). */
  readonly commitHash: Uint8Array;
  /** The commit's model hash as the log records it (32 bytes). */
  readonly modelHash: Uint8Array;
  /** The commit's strategy state hash as the log records it (32 bytes), when known. */
  readonly stateHash?: Uint8Array;
}

/** Options of {@link openSnapshot}. */
export interface OpenSnapshotOptions extends SnapshotLimits {
  /** The federation's signing key registry. */
  readonly keys: KeyLookup;
  /** The federation data key (32 bytes). Not modified. */
  readonly dataKey: Uint8Array;
  readonly expected: SnapshotExpectation;
}

/** A verified and decrypted snapshot. */
export interface OpenedSnapshot {
  readonly header: SnapshotHeader;
  /** The model (fresh array, owned by the caller); `modelHash(parameters)` is `header.modelHash`. */
  readonly parameters: Float32Array;
  /** The strategy state (fresh arrays); `strategyStateHash(strategyState)` is `header.stateHash`. */
  readonly strategyState: StrategyState;
}

/**
 * Writes an encrypted, signed snapshot of one committed model version. Byte layout (all framing
 * integers big-endian):
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | magic "COHS" |
 * | 4 | 1 | format version (1) |
 * | 5 | 3 | reserved, 0 |
 * | 8 | 4 | H: header length, u32 (≤ 4096) |
 * | 12 | H | header (below) |
 * | 12 + H | 4 | S: signature length, u32 (1 … 8192) |
 * | 16 + H | S | signature: `sign(signing, 'model-snapshot', header)` |
 * | 16 + H + S | C | AES-256-GCM ciphertext ‖ 16-byte tag; C = header.ciphertextLength |
 *
 * The header is canonical (`CanonicalWriter`: u64/u8 big-endian, `str`/`bytes` with a u32
 * big-endian length prefix): `str(federation) ‖ bytes(commitHash) ‖ u64(height) ‖ u64(round) ‖
 * u8(kind: 0 genesis, 1 round, 2 rollback) ‖ bytes(modelHash) ‖ bytes(stateHash) ‖
 * u64(logSequence) ‖ u64(parameterCount) ‖ str(signer) ‖ str(signerKeyId) ‖ u8(algorithm id:
 * 1 falcon-512, 2 ml-dsa-65) ‖ bytes(nonce: 12 random bytes) ‖ u64(C) ‖ bytes(SHA-256 of the C
 * ciphertext bytes)`. `stateHash` is `strategyStateHash(strategyState)`.
 *
 * The plaintext is `u32 little-endian state length ‖ encodeStrategyState(strategyState) ‖
 * parameters as little-endian float32`, so C = 16 + 4 + (20 + 8n) + 4·parameterCount with n, the
 * moment length, 0 or parameterCount. Key: the 32-byte data key; nonce: the header's; associated
 * data: the header without its last field (the ciphertext digest, which depends on the tag and so
 * cannot be bound into it). The signature covers the whole header, hence, through the digest, every
 * ciphertext byte: the coordinator checks integrity and origin without the data key.
 *
 * Buffers holding plaintext that this function allocates are wiped before it returns.
 *
 * @throws InvalidArgumentError naming the field: a bad id string, a commit whose hash does not
 *   verify, parameters that do not hash to `commit.modelHash`, a strategy state that does not fit
 *   the parameters, a data key that is not 32 bytes, a log sequence < 1, wrong signing key lengths.
 */
export function encodeSnapshot(input: SnapshotInput): Uint8Array {
  assertInput(input);
  const { commit, parameters, signing } = input;
  const stateBytes = encodeStrategyState(input.strategyState);
  const parameterBytes = float32ToLeBytes(parameters);
  const ownsParameterBytes = parameterBytes.buffer !== parameters.buffer;
  const stateLength = new Uint8Array(SNAPSHOT_STATE_LENGTH_BYTES);
  new DataView(stateLength.buffer).setUint32(0, stateBytes.length, true);
  try {
    const ciphertextLength =
      SNAPSHOT_STATE_LENGTH_BYTES + stateBytes.length + parameterBytes.length + SNAPSHOT_TAG_BYTES;
    const nonce = new Uint8Array(randomBytes(SNAPSHOT_NONCE_BYTES));
    const fieldBytes = encodeSnapshotHeaderFields({
      federation: input.federation,
      commitHash: commit.hash,
      height: commit.height,
      round: commit.round,
      kind: commit.kind,
      modelHash: commit.modelHash,
      stateHash: strategyStateBytesHash(stateBytes),
      logSequence: input.logSequence,
      parameterCount: parameters.length,
      signer: input.signer,
      signerKeyId: signing.keyId,
      signatureAlgorithm: signing.algorithm,
      nonce,
      ciphertextLength,
    });
    if (fieldBytes.length + 4 + HASH_BYTES > MAX_SNAPSHOT_HEADER_BYTES) {
      throw new InvalidArgumentError(`snapshot header would exceed ${MAX_SNAPSHOT_HEADER_BYTES} bytes`);
    }
    const sealed = sealParts(input.dataKey, nonce, fieldBytes, [stateLength, stateBytes, parameterBytes]);
    const header = appendCiphertextDigest(fieldBytes, sha256(...sealed));
    const signature = sign(signing, SNAPSHOT_SIGNING_DOMAIN, header);
    const out = new Uint8Array(
      SNAPSHOT_PREFIX_BYTES + header.length + 4 + signature.length + ciphertextLength,
    );
    const view = new DataView(out.buffer);
    out.set(SNAPSHOT_MAGIC_BYTES, 0);
    view.setUint8(4, SNAPSHOT_FORMAT_VERSION);
    view.setUint32(8, header.length, false);
    out.set(header, SNAPSHOT_PREFIX_BYTES);
    let offset = SNAPSHOT_PREFIX_BYTES + header.length;
    view.setUint32(offset, signature.length, false);
    out.set(signature, offset + 4);
    offset += 4 + signature.length;
    for (const piece of sealed) {
      out.set(piece, offset);
      offset += piece.length;
    }
    return out;
  } finally {
    stateBytes.fill(0);
    stateLength.fill(0);
    if (ownsParameterBytes) parameterBytes.fill(0);
  }
}

/**
 * Reads a snapshot's header without verifying anything but its shape (what a receiver checks
 * before it spends a hash or a signature verification on the snapshot): total size against
 * `limits.maxBytes` (before any parsing), magic, version and reserved bytes, header and signature
 * lengths, header fields, and the ciphertext length against the header and `parameterCount`.
 * Nothing returned is authenticated: decide with it only what to refuse (another height, signer or
 * federation than the caller takes), never what to accept; {@link readSnapshotHeader} then
 * verifies the same bytes.
 *
 * @returns the unverified header (fresh arrays).
 * @throws SnapshotError `SNAPSHOT_TOO_LARGE` or `SNAPSHOT_MALFORMED`; InvalidArgumentError for a
 *   `bytes` that is not a Uint8Array or a `maxBytes` that is not a positive safe integer.
 */
export function peekSnapshotHeader(bytes: Uint8Array, limits: SnapshotLimits): SnapshotHeader {
  assertBytesArg('bytes', bytes);
  assertLimits(limits);
  return readFrame(bytes, limits.maxBytes).header;
}

/**
 * Checks a snapshot's framing, header and signature without the data key (what the coordinator
 * runs before storing one), cheapest check first: total size against `limits.maxBytes` (before
 * any parsing), magic, version and reserved bytes, header and signature lengths, header fields,
 * the ciphertext length against the header and against `parameterCount`, the signer's key in
 * `keys` (same key id and algorithm), the SHA-256 of the ciphertext, then the signature.
 * `keys` should know only the members allowed to write snapshots (sites): any member it returns a
 * key for is accepted as the signer. Checking the header against what the caller expects
 * (federation, the commit at `height` in its log) is the caller's.
 *
 * @returns the verified header (fresh arrays).
 * @throws SnapshotError `SNAPSHOT_TOO_LARGE`, `SNAPSHOT_MALFORMED`, `SNAPSHOT_WRONG_SIGNER`,
 *   `SNAPSHOT_DIGEST_MISMATCH` or `SNAPSHOT_BAD_SIGNATURE`; InvalidArgumentError for a `bytes`
 *   that is not a Uint8Array, a `keys` that is not a function or a `maxBytes` that is not a
 *   positive safe integer.
 */
export function readSnapshotHeader(
  bytes: Uint8Array,
  keys: KeyLookup,
  limits: SnapshotLimits,
): SnapshotHeader {
  assertBytesArg('bytes', bytes);
  assertKeys('keys', keys);
  assertLimits(limits);
  return readVerified(bytes, keys, limits.maxBytes).header;
}

/**
 * Verifies (as {@link readSnapshotHeader}), checks the header against `expected`, decrypts with
 * the data key and checks the content: the parameters hash to `expected.modelHash` and the
 * strategy state hashes to the header's state hash (which equals `expected.stateHash` when given).
 * The decrypted plaintext buffer is wiped before returning; the returned arrays are the caller's.
 *
 * @throws SnapshotError any code of {@link readSnapshotHeader}, then `SNAPSHOT_CONTEXT` (another
 *   federation, commit, model or state than expected), `SNAPSHOT_DECRYPT_FAILED` (wrong data key),
 *   `SNAPSHOT_STATE_MISMATCH`, `SNAPSHOT_MODEL_MISMATCH`, or `SNAPSHOT_MALFORMED` for an
 *   authenticated plaintext the signer built inconsistently; each of these names the signer,
 *   whose signature verified, in `details.signedBy`. InvalidArgumentError naming a bad option.
 */
export function openSnapshot(bytes: Uint8Array, options: OpenSnapshotOptions): OpenedSnapshot {
  assertBytesArg('bytes', bytes);
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object', { details: { name: 'options' } });
  }
  assertKeys('options.keys', options.keys);
  assertDataKey('options.dataKey', options.dataKey);
  assertInteger('options.maxBytes', options.maxBytes, 1, Number.MAX_SAFE_INTEGER);
  const expected = assertExpectation(options.expected);
  const verified = readVerified(bytes, options.keys, options.maxBytes);
  try {
    return openVerified(verified, options.dataKey, expected);
  } catch (err) {
    if (!(err instanceof SnapshotError)) throw err;
    throw new SnapshotError(err.code, err.message, {
      cause: err.cause,
      details: { ...err.details, signedBy: verified.header.signer },
    });
  }
}

/** The checks of {@link openSnapshot} after the signature verified. */
function openVerified(
  verified: VerifiedSnapshot,
  dataKey: Uint8Array,
  expected: SnapshotExpectation,
): OpenedSnapshot {
  const { header, fieldBytes, sealed } = verified;
  checkContext(header, expected);
  const plain = openSealed(dataKey, header.nonce, fieldBytes, sealed);
  try {
    const view = new DataView(plain.buffer, plain.byteOffset, plain.byteLength);
    const stateLength = view.getUint32(0, true);
    const parameterBytes = 4 * header.parameterCount;
    if (SNAPSHOT_STATE_LENGTH_BYTES + stateLength + parameterBytes !== plain.length) {
      throw new SnapshotError(
        'SNAPSHOT_MALFORMED',
        `snapshot plaintext: state length ${stateLength} and ${header.parameterCount} parameters do not fill ${plain.length} bytes`,
      );
    }
    const stateBytes = plain.subarray(SNAPSHOT_STATE_LENGTH_BYTES, SNAPSHOT_STATE_LENGTH_BYTES + stateLength);
    const stateHash = strategyStateBytesHash(stateBytes);
    if (!bytesEqual(stateHash, header.stateHash)) {
      throw new SnapshotError(
        'SNAPSHOT_STATE_MISMATCH',
        `snapshot strategy state hashes to ${bytesToHex(stateHash)}, the header says ${bytesToHex(header.stateHash)}`,
        { details: { field: 'stateHash' } },
      );
    }
    let strategyState: StrategyState;
    try {
      strategyState = decodeStrategyState(stateBytes);
      assertStrategyState(strategyState, strategyState.strategy, header.parameterCount, 'snapshot state');
    } catch (cause) {
      throw new SnapshotError(
        'SNAPSHOT_MALFORMED',
        `snapshot strategy state does not decode: ${(cause as Error).message}`,
        { cause },
      );
    }
    const parameters = leBytesToFloat32(plain.subarray(SNAPSHOT_STATE_LENGTH_BYTES + stateLength));
    let actual: Uint8Array;
    try {
      actual = modelHash(parameters);
    } catch (cause) {
      throw new SnapshotError(
        'SNAPSHOT_MODEL_MISMATCH',
        `snapshot parameters are not a model: ${(cause as Error).message}`,
        { cause },
      );
    }
    if (!bytesEqual(actual, expected.modelHash)) {
      throw new SnapshotError(
        'SNAPSHOT_MODEL_MISMATCH',
        `snapshot parameters hash to ${bytesToHex(actual)}, expected model ${bytesToHex(expected.modelHash)}`,
        { details: { field: 'modelHash' } },
      );
    }
    return { header, parameters, strategyState };
  } finally {
    plain.fill(0);
  }
}

function checkContext(header: SnapshotHeader, expected: SnapshotExpectation): void {
  const context = (field: string, actual: string, wanted: string) =>
    new SnapshotError('SNAPSHOT_CONTEXT', `snapshot ${field} is ${actual}, expected ${wanted}`, {
      details: { field },
    });
  if (header.federation !== expected.federation) {
    throw context('federation', JSON.stringify(header.federation), JSON.stringify(expected.federation));
  }
  for (const field of ['commitHash', 'modelHash', 'stateHash'] as const) {
    const wanted = expected[field];
    if (wanted !== undefined && !bytesEqual(header[field], wanted)) {
      throw context(field, bytesToHex(header[field]), bytesToHex(wanted));
    }
  }
}

function assertInput(input: SnapshotInput): void {
  if (typeof input !== 'object' || input === null) {
    throw new InvalidArgumentError('input must be a snapshot input object', { details: { name: 'input' } });
  }
  assertId('input.federation', input.federation);
  assertId('input.signer', input.signer);
  if (!verifyCommit(input.commit)) {
    throw new InvalidArgumentError('input.commit must be a commit whose hash verifies', {
      details: { name: 'input.commit' },
    });
  }
  assertInteger('input.logSequence', input.logSequence, 1, Number.MAX_SAFE_INTEGER);
  if (!(input.parameters instanceof Float32Array)) {
    throw new InvalidArgumentError('input.parameters must be a Float32Array', {
      details: { name: 'input.parameters' },
    });
  }
  if (!bytesEqual(modelHash(input.parameters), input.commit.modelHash)) {
    throw new InvalidArgumentError("input.parameters do not hash to input.commit's modelHash", {
      details: { name: 'input.parameters' },
    });
  }
  const state = input.strategyState;
  if (typeof state !== 'object' || state === null) {
    throw new InvalidArgumentError('input.strategyState must be a strategy state object', {
      details: { name: 'input.strategyState' },
    });
  }
  assertStrategyState(state, state.strategy, input.parameters.length, 'input.strategyState');
  assertDataKey('input.dataKey', input.dataKey);
  const signing = input.signing;
  if (typeof signing !== 'object' || signing === null || typeof signing.keyId !== 'string') {
    throw new InvalidArgumentError('input.signing must be a signing key pair', {
      details: { name: 'input.signing' },
    });
  }
}

function assertLimits(limits: SnapshotLimits): void {
  if (typeof limits !== 'object' || limits === null) {
    throw new InvalidArgumentError('limits must be an object with maxBytes', { details: { name: 'limits' } });
  }
  assertInteger('limits.maxBytes', limits.maxBytes, 1, Number.MAX_SAFE_INTEGER);
}

function assertExpectation(expected: SnapshotExpectation): SnapshotExpectation {
  if (typeof expected !== 'object' || expected === null) {
    throw new InvalidArgumentError('options.expected must be an object', {
      details: { name: 'options.expected' },
    });
  }
  assertId('options.expected.federation', expected.federation);
  assertHash('options.expected.commitHash', expected.commitHash);
  assertHash('options.expected.modelHash', expected.modelHash);
  if (expected.stateHash !== undefined) assertHash('options.expected.stateHash', expected.stateHash);
  return expected;
}

function assertId(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(`${name} must be a non-empty string`, { details: { name } });
  }
  const length = new TextEncoder().encode(value).length;
  if (length > MAX_SNAPSHOT_ID_BYTES) {
    throw new InvalidArgumentError(`${name} is ${length} UTF-8 bytes; at most ${MAX_SNAPSHOT_ID_BYTES}`, {
      details: { name, actual: length },
    });
  }
}

function assertHash(name: string, value: unknown): void {
  if (!(value instanceof Uint8Array) || value.length !== HASH_BYTES) {
    throw new InvalidArgumentError(`${name} must be a ${HASH_BYTES}-byte Uint8Array`, { details: { name } });
  }
}

function assertBytesArg(name: string, value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${name} must be a Uint8Array`, { details: { name } });
  }
}

function assertKeys(name: string, keys: unknown): void {
  if (typeof keys !== 'function') {
    throw new InvalidArgumentError(`${name} must be a key lookup function`, { details: { name } });
  }
}
