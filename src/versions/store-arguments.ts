import { bytesEqual } from '../../crypto/digest/index.ts';
import { encodeStrategyState } from '../../federation/strategy/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { type Commit, HASH_BYTES, verifyCommit } from './commit.ts';
import { bytesToHex } from './hex.ts';
import { modelHash } from './model-hash.ts';
import type { PreparedCandidate } from './prepared-file.ts';
import { VersionError } from './version-error.ts';

/** Throws `INVALID_ARGUMENT` naming `name` unless `hash` is a 32-byte Uint8Array. */
export function assertHash(name: string, hash: Uint8Array): void {
  if (!(hash instanceof Uint8Array) || hash.length !== HASH_BYTES) {
    throw new InvalidArgumentError(`${name} must be a ${HASH_BYTES}-byte Uint8Array`, { details: { name } });
  }
}

/** Throws `INVALID_ARGUMENT` naming `name` unless `commit` verifies. */
export function assertCommit(name: string, commit: Commit): void {
  if (!verifyCommit(commit)) {
    throw new InvalidArgumentError(`${name} must be a commit whose hash verifies`, { details: { name } });
  }
}

/** Throws `MODEL_MISMATCH` unless `parameters` hash to `commit.modelHash` (`INVALID_ARGUMENT` for a non-array). */
export function assertModel(name: string, parameters: Float32Array, commit: Commit): void {
  if (!(parameters instanceof Float32Array)) {
    throw new InvalidArgumentError(`${name} must be a Float32Array`, { details: { name } });
  }
  if (!bytesEqual(modelHash(parameters), commit.modelHash)) {
    throw new VersionError('MODEL_MISMATCH', `${name} do not hash to the commit's modelHash`, {
      details: { name, commit: bytesToHex(commit.hash) },
    });
  }
}

/**
 * Checks a {@link PreparedCandidate} named `name`: its commit verifies (`INVALID_ARGUMENT` naming
 * `name.commit`), its parameters hash to the commit's `modelHash` (`MODEL_MISMATCH`), and its
 * strategy state encodes (`INVALID_ARGUMENT`, or `UPDATE_NON_FINITE` for a non-finite moment).
 */
export function assertCandidate(name: string, candidate: PreparedCandidate): void {
  if (typeof candidate !== 'object' || candidate === null) {
    throw new InvalidArgumentError(`${name} must be an object`, { details: { name } });
  }
  assertCommit(`${name}.commit`, candidate.commit);
  assertModel(`${name}.parameters`, candidate.parameters, candidate.commit);
  try {
    encodeStrategyState(candidate.strategyState);
  } catch (cause) {
    if (!(cause instanceof InvalidArgumentError)) throw cause;
    throw new InvalidArgumentError(`${name}.strategyState: ${cause.message}`, {
      cause,
      details: { name: `${name}.strategyState` },
    });
  }
}
