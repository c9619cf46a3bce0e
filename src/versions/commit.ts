import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import { CanonicalWriter } from '../protocol/canonical-writer.ts';
import { modelHash } from './model-hash.ts';

/** Domain separator of {@link commitHash}. */
export const COMMIT_HASH_DOMAIN = 'cohort/v1/commit';

/** Bytes of every hash and digest in a commit. */
export const HASH_BYTES = 32;

/** Largest `params` a commit may carry (1 MiB): strategy and codec parameters, never a model. */
export const MAX_COMMIT_PARAMS_BYTES = 1 << 20;

/**
 * What a commit records; its wire id is the index (`genesis` 0, `round` 1, `rollback` 2,
 * `statistics` 3: the federation's feature statistics, its model the parent's).
 */
export const COMMIT_KINDS = ['genesis', 'round', 'rollback', 'statistics'] as const;

export type CommitKind = (typeof COMMIT_KINDS)[number];

/** 32 zero bytes: the parent of genesis and the aggregate digest of genesis and rollback commits. */
export const ZERO_HASH: Uint8Array = new Uint8Array(HASH_BYTES);

/** Everything a commit's hash covers (docs/log-format.md, "Commits and hashes"). */
export interface CommitFields {
  /** Hash of the parent commit; {@link ZERO_HASH} for genesis. */
  readonly parent: Uint8Array;
  /** Distance from genesis: 0 for genesis, parent's height + 1 otherwise. */
  readonly height: number;
  /** The federation round that produced the commit (0 for genesis). */
  readonly round: number;
  /** Digest of the round's aggregate; {@link ZERO_HASH} for genesis and rollback. */
  readonly aggregateDigest: Uint8Array;
  /** H(w′) of the commit's model ({@link modelHash}). */
  readonly modelHash: Uint8Array;
  /** Canonical encoding of the round's strategy and codec parameters; opaque here. */
  readonly params: Uint8Array;
  readonly kind: CommitKind;
}

/** A model version: {@link CommitFields} plus their hash ({@link commitHash}). */
export interface Commit extends CommitFields {
  /** SHA-256 of the fields' canonical bytes; the commit's identity. */
  readonly hash: Uint8Array;
}

/**
 * Why `fields` break a commit invariant, or `null`. `name` prefixes the field in the message.
 * Checks types and lengths, then shape: genesis has a zero parent, height 0, round 0 and a zero
 * aggregate digest; round and rollback commits have a non-zero parent and height ≥ 1; rollback
 * commits have a zero aggregate digest (they apply no aggregate).
 */
export function commitFieldsProblem(fields: CommitFields, name = 'commit'): string | null {
  if (typeof fields !== 'object' || fields === null) return `${name} must be an object`;
  if (!(COMMIT_KINDS as readonly unknown[]).includes(fields.kind)) {
    return `${name}.kind is ${String(fields.kind)}, expects one of ${COMMIT_KINDS.join(', ')}`;
  }
  for (const key of ['parent', 'aggregateDigest', 'modelHash'] as const) {
    const value = fields[key];
    if (!(value instanceof Uint8Array)) return `${name}.${key} must be a Uint8Array`;
    if (value.length !== HASH_BYTES) return `${name}.${key} length ${value.length}, expects ${HASH_BYTES}`;
  }
  if (!(fields.params instanceof Uint8Array)) return `${name}.params must be a Uint8Array`;
  if (fields.params.length > MAX_COMMIT_PARAMS_BYTES) {
    return `${name}.params length ${fields.params.length} exceeds ${MAX_COMMIT_PARAMS_BYTES}`;
  }
  for (const key of ['height', 'round'] as const) {
    const value = fields[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      return `${name}.${key} must be an integer in [0, 2^53 − 1], got ${String(value)}`;
    }
  }
  const zeroParent = isZero(fields.parent);
  if (fields.kind === 'genesis') {
    if (!zeroParent) return `${name}.parent of a genesis commit must be 32 zero bytes`;
    if (fields.height !== 0) return `${name}.height of a genesis commit is ${fields.height}, must be 0`;
    if (fields.round !== 0) return `${name}.round of a genesis commit is ${fields.round}, must be 0`;
  } else {
    if (zeroParent) return `${name}.parent of a ${fields.kind} commit must not be 32 zero bytes`;
    if (fields.height < 1)
      return `${name}.height of a ${fields.kind} commit is ${fields.height}, must be ≥ 1`;
  }
  if (fields.kind !== 'round' && fields.kind !== 'statistics' && !isZero(fields.aggregateDigest)) {
    return `${name}.aggregateDigest of a ${fields.kind} commit must be 32 zero bytes`;
  }
  return null;
}

/**
 * The commit hash: SHA-256 over the canonical string (see `CanonicalWriter`)
 * `str('cohort/v1/commit') ‖ str(kind) ‖ bytes(parent) ‖ u64(height) ‖ u64(round) ‖
 * bytes(aggregateDigest) ‖ bytes(modelHash) ‖ bytes(params)`, where `bytes`/`str` carry a u32
 * big-endian length prefix and `u64` is big-endian.
 *
 * @throws InvalidArgumentError naming the field when `fields` break a {@link CommitFields} invariant.
 */
export function commitHash(fields: CommitFields): Uint8Array {
  assertFields(fields, 'fields');
  return hashFields(fields);
}

/** A commit over `fields` with its hash computed. Fields are copied; throws like {@link commitHash}. */
export function createCommit(fields: CommitFields): Commit {
  assertFields(fields, 'fields');
  const copy: CommitFields = {
    parent: fields.parent.slice(),
    height: fields.height,
    round: fields.round,
    aggregateDigest: fields.aggregateDigest.slice(),
    modelHash: fields.modelHash.slice(),
    params: fields.params.slice(),
    kind: fields.kind,
  };
  return { hash: hashFields(copy), ...copy };
}

/** The genesis commit of `parameters` (the deterministic initial model) under `params`. */
export function genesisCommit(parameters: Float32Array, params: Uint8Array): Commit {
  return createCommit({
    parent: ZERO_HASH,
    height: 0,
    round: 0,
    aggregateDigest: ZERO_HASH,
    modelHash: modelHash(parameters),
    params,
    kind: 'genesis',
  });
}

/** The `round` commit after `parent`: the model `modelHash` reached by applying the aggregate `aggregateDigest`. */
export function roundCommit(
  parent: Commit,
  fields: { round: number; aggregateDigest: Uint8Array; modelHash: Uint8Array; params: Uint8Array },
): Commit {
  assertParent(parent);
  return createCommit({ ...fields, parent: parent.hash, height: parent.height + 1, kind: 'round' });
}

/**
 * The `statistics` commit after `parent`: the federation's feature sums (decrypted from the
 * aggregate `aggregateDigest`, encoded as `params` by `encodeStatisticsParams`); the model is the
 * parent's, unchanged.
 */
export function statisticsCommit(
  parent: Commit,
  fields: { round: number; aggregateDigest: Uint8Array; params: Uint8Array },
): Commit {
  assertParent(parent);
  return createCommit({
    ...fields,
    parent: parent.hash,
    height: parent.height + 1,
    modelHash: parent.modelHash,
    kind: 'statistics',
  });
}

/**
 * A rollback commit after `head` whose model is `target`'s (docs/round-protocol.md, "Rollback"):
 * same `modelHash`, a new hash (other parent, height, round and kind), zero aggregate digest.
 * `params` defaults to the target's.
 */
export function rollbackCommit(head: Commit, target: Commit, round: number, params?: Uint8Array): Commit {
  assertParent(head);
  if (typeof target !== 'object' || target === null || !(target.modelHash instanceof Uint8Array)) {
    throw new InvalidArgumentError('target must be a commit');
  }
  assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
  return createCommit({
    parent: head.hash,
    height: head.height + 1,
    round,
    aggregateDigest: ZERO_HASH,
    modelHash: target.modelHash,
    params: params ?? target.params,
    kind: 'rollback',
  });
}

/** True when `commit`'s fields satisfy the invariants and `commit.hash` is their hash. Never throws. */
export function verifyCommit(commit: Commit): boolean {
  if (typeof commit !== 'object' || commit === null) return false;
  if (!(commit.hash instanceof Uint8Array) || commit.hash.length !== HASH_BYTES) return false;
  if (commitFieldsProblem(commit) !== null) return false;
  return bytesEqual(hashFields(commit), commit.hash);
}

function hashFields(fields: CommitFields): Uint8Array {
  const canonical = new CanonicalWriter()
    .str(COMMIT_HASH_DOMAIN)
    .str(fields.kind)
    .bytes(fields.parent)
    .u64(fields.height)
    .u64(fields.round)
    .bytes(fields.aggregateDigest)
    .bytes(fields.modelHash)
    .bytes(fields.params)
    .finish();
  return sha256(canonical);
}

function assertFields(fields: CommitFields, name: string): void {
  const problem = commitFieldsProblem(fields, name);
  if (problem !== null) throw new InvalidArgumentError(problem, { details: { name } });
}

function assertParent(parent: Commit): void {
  if (!verifyCommit(parent)) {
    throw new InvalidArgumentError('parent must be a commit whose hash verifies', {
      details: { name: 'parent' },
    });
  }
}

function isZero(bytes: Uint8Array): boolean {
  let acc = 0;
  for (const b of bytes) acc |= b;
  return acc === 0;
}
