import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bytesEqual } from '../../crypto/digest/index.ts';
import { encodeStrategyState, type StrategyState } from '../../federation/strategy/index.ts';
import { assertFiniteArray, assertInteger, InvalidArgumentError } from '../errors/index.ts';
import {
  listDir,
  readFileOrNull,
  removeFileDurable,
  removeTempFiles,
  syncDir,
  writeFileAtomic,
} from './atomic-file.ts';
import { type Commit, HASH_BYTES, verifyCommit } from './commit.ts';
import { decodeCommit, encodeCommit } from './commit-codec.ts';
import { bytesToHex } from './hex.ts';
import { modelFileParts, readModelFile } from './model-file.ts';
import { modelHash } from './model-hash.ts';
import { type PreparedCandidate, preparedFileParts, readPreparedFile } from './prepared-file.ts';
import { readStateFile, stateFileParts } from './state-file.ts';
import { VersionError } from './version-error.ts';

const HEAD_FILE = 'HEAD';
const RESIDUAL_FILE = 'residual.f32';
const STATE_FILE = 'strategy-state.bin';
const MODEL_NAME = /^([0-9a-f]{64})\.f32$/;
const PREPARED_NAME = /^(0|[1-9][0-9]{0,15})\.bin$/;
const HEAD_CONTENT = /^([0-9a-f]{64})\n$/;

/**
 * A site agent's durable store of model versions (DESIGN §2 step 7, §5). Layout under `dir`:
 *
 * - `models/<modelHashHex>.f32`: models, shared by every commit with that `modelHash`;
 * - `commits/<hashHex>.commit`: every commit since genesis (`encodeCommit`);
 * - `HEAD`: the current commit's hash in hex and a newline;
 * - `prepared/<round>.bin`: a candidate written on PREPARE (commit, model, strategy state);
 * - `residual.f32`: the error-feedback residual; `strategy-state.bin`: HEAD's strategy state.
 *
 * Every write is atomic (temporary file, fsync, rename, directory fsync) and every read verified.
 * HEAD moves only by replacing the `HEAD` file after the new model and commit are durable: a crash
 * at any point leaves the old HEAD or the new one, never a half-written model. One store instance
 * per directory: the instance caches HEAD, and the store takes no lock.
 *
 * Failures are {@link VersionError}s (`STORE_CORRUPT`, `STORE_IO`, …) or `INVALID_ARGUMENT`.
 */
export interface ModelStore {
  /** The store directory, absolute. */
  readonly dir: string;
  /** The current commit, or `null` before {@link ModelStore.init}. */
  head(): Commit | null;
  /** The stored commit with `hash`. Throws `COMMIT_UNKNOWN`, or `STORE_CORRUPT` when it fails to verify. */
  readCommit(hash: Uint8Array): Commit;
  /** True when the model of `commit` is stored (its file exists; not verified). */
  hasModel(commit: Commit): boolean;
  /** The model of `commit`, verified. Throws `MODEL_MISSING` (pruned/never stored) or `STORE_CORRUPT`. */
  readModel(commit: Commit): Float32Array;
  /**
   * Writes `genesis` and its model and points HEAD at it. A no-op returning HEAD when HEAD already is
   * `genesis`; `ALREADY_INITIALIZED` when HEAD is another commit; `MODEL_MISMATCH` when `parameters`
   * do not hash to `genesis.modelHash`.
   */
  init(genesis: Commit, parameters: Float32Array): Commit;
  /**
   * Writes `candidate` durably as prepared for `candidate.commit.round`; HEAD is unchanged. The
   * commit must verify and be a child of HEAD (`PARENT_MISMATCH`), the parameters must hash to its
   * `modelHash` (`MODEL_MISMATCH`). Preparing the same commit again is a no-op; a different commit
   * for a round already prepared is `PREPARED_CONFLICT` (abort it first).
   */
  prepare(candidate: PreparedCandidate): PreparedCandidate;
  /** The candidate prepared for `round`, verified, or `null`. */
  prepared(round: number): PreparedCandidate | null;
  /** Rounds holding a prepared candidate, ascending (a restarted agent must resolve each). */
  preparedRounds(): number[];
  /**
   * Applies COMMIT: checks the candidate prepared for `round` has hash `commitHash` (else
   * `PREPARED_MISMATCH`; none is `NOT_PREPARED`), writes its model and commit, swaps HEAD, writes
   * its strategy state and discards the prepared file. Idempotent: finishing a commit whose HEAD
   * swap already happened just completes the rest, and re-applying a completed commit (HEAD is
   * already `commitHash`) returns HEAD. Returns the new HEAD.
   */
  commitPrepared(round: number, commitHash: Uint8Array): Commit;
  /** Applies ABORT: discards the candidate prepared for `round`. False when there was none. */
  abortPrepared(round: number): boolean;
  /** Up to `limit` commits from HEAD back towards genesis, HEAD first. */
  history(limit: number): Commit[];
  /** Durably replaces the error-feedback residual (finite values). */
  saveResidual(residual: Float32Array): void;
  /** The residual, verified, or `null` when none was saved. */
  loadResidual(): Float32Array | null;
  /** Durably replaces the strategy state, recorded as HEAD's (`NOT_INITIALIZED` without HEAD). */
  saveStrategyState(state: StrategyState): void;
  /** HEAD's strategy state, or `null` when none was saved; `STATE_STALE` when it belongs to another commit. */
  loadStrategyState(): StrategyState | null;
  /**
   * Deletes every model file but those of the last `keep` commits (HEAD included, `keep` ≥ 1).
   * Returns the removed models' hashes in hex, sorted. Commits are kept.
   */
  pruneModels(keep: number): string[];
}

/**
 * Opens (creating if needed) the store in `dir`. Removes temporary files of interrupted writes,
 * verifies HEAD and finishes a commit interrupted after its HEAD swap (a prepared candidate whose
 * commit already is HEAD).
 *
 * @throws VersionError `STORE_IO` when the directory cannot be created, `STORE_CORRUPT` when HEAD
 *   does not name a stored, verifying commit.
 */
export function openModelStore(dir: string): ModelStore {
  if (typeof dir !== 'string' || dir.length === 0) {
    throw new InvalidArgumentError('dir must be a non-empty path', { details: { name: 'dir' } });
  }
  return new DirectoryModelStore(resolve(dir));
}

class DirectoryModelStore implements ModelStore {
  readonly dir: string;
  readonly #models: string;
  readonly #commits: string;
  readonly #prepared: string;
  #head: Commit | null;

  constructor(dir: string) {
    this.dir = dir;
    this.#models = join(dir, 'models');
    this.#commits = join(dir, 'commits');
    this.#prepared = join(dir, 'prepared');
    try {
      for (const sub of [this.#models, this.#commits, this.#prepared]) mkdirSync(sub, { recursive: true });
    } catch (cause) {
      throw new VersionError('STORE_IO', `cannot create the model store in ${dir}`, {
        cause,
        details: { path: dir },
      });
    }
    syncDir(dir);
    for (const sub of [dir, this.#models, this.#commits, this.#prepared]) removeTempFiles(sub);
    this.#head = this.#loadHead();
    this.#rollForward();
  }

  head(): Commit | null {
    return this.#head;
  }

  readCommit(hash: Uint8Array): Commit {
    assertHash('hash', hash);
    const hex = bytesToHex(hash);
    const path = join(this.#commits, `${hex}.commit`);
    const bytes = readFileOrNull(path);
    if (bytes === null) {
      throw new VersionError('COMMIT_UNKNOWN', `no commit ${hex} in ${this.dir}`, {
        details: { commit: hex },
      });
    }
    let commit: Commit;
    try {
      commit = decodeCommit(bytes);
    } catch (cause) {
      throw corrupt(path, 'commit does not decode or verify', cause);
    }
    if (!bytesEqual(commit.hash, hash)) throw corrupt(path, `holds commit ${bytesToHex(commit.hash)}`);
    return commit;
  }

  hasModel(commit: Commit): boolean {
    assertCommit('commit', commit);
    return readFileOrNull(this.#modelPath(commit.modelHash)) !== null;
  }

  readModel(commit: Commit): Float32Array {
    assertCommit('commit', commit);
    const path = this.#modelPath(commit.modelHash);
    const bytes = readFileOrNull(path);
    if (bytes === null) {
      const hex = bytesToHex(commit.modelHash);
      throw new VersionError(
        'MODEL_MISSING',
        `model ${hex} of commit ${bytesToHex(commit.hash)} is not stored`,
        {
          details: { path, model: hex },
        },
      );
    }
    const values = readModelFile(bytes, path);
    let hash: Uint8Array;
    try {
      hash = modelHash(values);
    } catch (cause) {
      throw corrupt(path, 'model holds non-finite values', cause);
    }
    if (!bytesEqual(hash, commit.modelHash)) throw corrupt(path, 'model does not hash to its file name');
    return values;
  }

  init(genesis: Commit, parameters: Float32Array): Commit {
    assertCommit('genesis', genesis);
    if (genesis.kind !== 'genesis') {
      throw new InvalidArgumentError(`genesis.kind is ${genesis.kind}, expects genesis`, {
        details: { name: 'genesis.kind' },
      });
    }
    assertModel('parameters', parameters, genesis);
    const head = this.#head;
    if (head !== null) {
      if (bytesEqual(head.hash, genesis.hash)) return head;
      throw new VersionError(
        'ALREADY_INITIALIZED',
        `store ${this.dir} is at ${bytesToHex(head.hash)}, not genesis ${bytesToHex(genesis.hash)}`,
        { details: { head: bytesToHex(head.hash), genesis: bytesToHex(genesis.hash) } },
      );
    }
    this.#writeModel(genesis.modelHash, parameters);
    this.#writeCommit(genesis);
    this.#swapHead(genesis);
    return genesis;
  }

  prepare(candidate: PreparedCandidate): PreparedCandidate {
    if (typeof candidate !== 'object' || candidate === null) {
      throw new InvalidArgumentError('candidate must be an object', { details: { name: 'candidate' } });
    }
    const { commit } = candidate;
    assertCommit('candidate.commit', commit);
    assertModel('candidate.parameters', candidate.parameters, commit);
    encodeStrategyState(candidate.strategyState); // validates, throws INVALID_ARGUMENT
    const head = this.#requireHead();
    this.#assertChildOfHead(commit, head);
    const existing = this.#readPreparedOrNull(commit.round, true);
    if (existing !== null) {
      if (bytesEqual(existing.commit.hash, commit.hash)) return existing;
      throw new VersionError(
        'PREPARED_CONFLICT',
        `round ${commit.round} already has candidate ${bytesToHex(existing.commit.hash)} prepared, not ${bytesToHex(commit.hash)}`,
        { details: { round: commit.round, prepared: bytesToHex(existing.commit.hash) } },
      );
    }
    writeFileAtomic(this.#prepared, preparedName(commit.round), preparedFileParts(candidate));
    return candidate;
  }

  prepared(round: number): PreparedCandidate | null {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    return this.#readPreparedOrNull(round, false);
  }

  preparedRounds(): number[] {
    const rounds: number[] = [];
    for (const name of listDir(this.#prepared)) {
      const match = PREPARED_NAME.exec(name);
      if (match !== null && Number.isSafeInteger(Number(match[1]))) rounds.push(Number(match[1]));
    }
    return rounds.sort((a, b) => a - b);
  }

  commitPrepared(round: number, commitHash: Uint8Array): Commit {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    assertHash('commitHash', commitHash);
    const candidate = this.#readPreparedOrNull(round, false);
    if (candidate === null) {
      // A decision re-applied after the commit completed (recovery replaying the log) is a no-op.
      const head = this.#head;
      if (head !== null && head.round === round && bytesEqual(head.hash, commitHash)) return head;
      throw new VersionError('NOT_PREPARED', `no candidate prepared for round ${round}`, {
        details: { round },
      });
    }
    const { commit } = candidate;
    if (!bytesEqual(commit.hash, commitHash)) {
      throw new VersionError(
        'PREPARED_MISMATCH',
        `round ${round} prepared ${bytesToHex(commit.hash)}, the decision is ${bytesToHex(commitHash)}`,
        { details: { round, prepared: bytesToHex(commit.hash), decided: bytesToHex(commitHash) } },
      );
    }
    const head = this.#requireHead();
    if (!bytesEqual(head.hash, commit.hash)) {
      this.#assertChildOfHead(commit, head);
      this.#writeModel(commit.modelHash, candidate.parameters);
      this.#writeCommit(commit);
      this.#swapHead(commit); // the switch: one rename
    }
    this.#finish(candidate);
    return commit;
  }

  abortPrepared(round: number): boolean {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    return removeFileDurable(this.#prepared, preparedName(round));
  }

  history(limit: number): Commit[] {
    assertInteger('limit', limit, 0, Number.MAX_SAFE_INTEGER);
    const out: Commit[] = [];
    let commit = this.#head;
    while (commit !== null && out.length < limit) {
      out.push(commit);
      if (commit.kind === 'genesis') break;
      commit = this.#readParent(commit);
    }
    return out;
  }

  saveResidual(residual: Float32Array): void {
    if (!(residual instanceof Float32Array)) {
      throw new InvalidArgumentError('residual must be a Float32Array', { details: { name: 'residual' } });
    }
    assertFiniteArray('residual', residual);
    writeFileAtomic(this.dir, RESIDUAL_FILE, modelFileParts(residual));
  }

  loadResidual(): Float32Array | null {
    const path = join(this.dir, RESIDUAL_FILE);
    const bytes = readFileOrNull(path);
    return bytes === null ? null : readModelFile(bytes, path);
  }

  saveStrategyState(state: StrategyState): void {
    const head = this.#requireHead();
    writeFileAtomic(this.dir, STATE_FILE, stateFileParts({ commit: head.hash, state }));
  }

  loadStrategyState(): StrategyState | null {
    const path = join(this.dir, STATE_FILE);
    const bytes = readFileOrNull(path);
    if (bytes === null) return null;
    const tagged = readStateFile(bytes, path);
    const head = this.#head;
    if (head === null || !bytesEqual(head.hash, tagged.commit)) {
      throw new VersionError(
        'STATE_STALE',
        `${path} belongs to commit ${bytesToHex(tagged.commit)}, HEAD is ${head === null ? 'unset' : bytesToHex(head.hash)}`,
        { details: { path, commit: bytesToHex(tagged.commit) } },
      );
    }
    return tagged.state;
  }

  pruneModels(keep: number): string[] {
    assertInteger('keep', keep, 1, Number.MAX_SAFE_INTEGER);
    const kept = new Set(this.history(keep).map((c) => bytesToHex(c.modelHash)));
    const removed: string[] = [];
    for (const name of listDir(this.#models)) {
      const hex = MODEL_NAME.exec(name)?.[1];
      if (hex === undefined || kept.has(hex)) continue;
      if (removeFileDurable(this.#models, name)) removed.push(hex);
    }
    return removed.sort();
  }

  #modelPath(hash: Uint8Array): string {
    return join(this.#models, `${bytesToHex(hash)}.f32`);
  }

  #writeModel(hash: Uint8Array, parameters: Float32Array): void {
    writeFileAtomic(this.#models, `${bytesToHex(hash)}.f32`, modelFileParts(parameters));
  }

  #writeCommit(commit: Commit): void {
    writeFileAtomic(this.#commits, `${bytesToHex(commit.hash)}.commit`, [encodeCommit(commit)]);
  }

  #swapHead(commit: Commit): void {
    writeFileAtomic(this.dir, HEAD_FILE, [new TextEncoder().encode(`${bytesToHex(commit.hash)}\n`)]);
    this.#head = commit;
  }

  /** The steps of a commit after the HEAD swap: strategy state, then the prepared file goes. */
  #finish(candidate: PreparedCandidate): void {
    writeFileAtomic(
      this.dir,
      STATE_FILE,
      stateFileParts({ commit: candidate.commit.hash, state: candidate.strategyState }),
    );
    removeFileDurable(this.#prepared, preparedName(candidate.commit.round));
  }

  #loadHead(): Commit | null {
    const path = join(this.dir, HEAD_FILE);
    const bytes = readFileOrNull(path);
    if (bytes === null) return null;
    const match = HEAD_CONTENT.exec(new TextDecoder().decode(bytes));
    if (match === null) throw corrupt(path, 'HEAD is not a commit hash in hex and a newline');
    const hash = new Uint8Array(Buffer.from(match[1]!, 'hex'));
    try {
      return this.readCommit(hash);
    } catch (cause) {
      if (cause instanceof VersionError && cause.code === 'COMMIT_UNKNOWN') {
        throw corrupt(path, `HEAD names commit ${match[1]}, which is not stored`, cause);
      }
      throw cause;
    }
  }

  /** Completes a commit interrupted after its HEAD swap (its prepared file is still there). */
  #rollForward(): void {
    const head = this.#head;
    if (head === null) return;
    for (const round of this.preparedRounds()) {
      let candidate: PreparedCandidate | null;
      try {
        candidate = this.#readPreparedOrNull(round, false);
      } catch {
        continue; // left for the agent: prepared(round) reports it as STORE_CORRUPT
      }
      if (candidate !== null && bytesEqual(candidate.commit.hash, head.hash)) this.#finish(candidate);
    }
  }

  #readPreparedOrNull(round: number, corruptAsNull: boolean): PreparedCandidate | null {
    const path = join(this.#prepared, preparedName(round));
    const bytes = readFileOrNull(path);
    if (bytes === null) return null;
    try {
      const candidate = readPreparedFile(bytes, path);
      if (candidate.commit.round !== round) throw corrupt(path, `holds round ${candidate.commit.round}`);
      return candidate;
    } catch (cause) {
      if (corruptAsNull && cause instanceof VersionError && cause.code === 'STORE_CORRUPT') return null;
      throw cause;
    }
  }

  #readParent(commit: Commit): Commit {
    try {
      return this.readCommit(commit.parent);
    } catch (cause) {
      if (cause instanceof VersionError && cause.code === 'COMMIT_UNKNOWN') {
        throw corrupt(
          this.#commits,
          `parent ${bytesToHex(commit.parent)} of commit ${bytesToHex(commit.hash)} is not stored`,
          cause,
        );
      }
      throw cause;
    }
  }

  #requireHead(): Commit {
    if (this.#head === null) {
      throw new VersionError(
        'NOT_INITIALIZED',
        `store ${this.dir} has no HEAD; call init with genesis first`,
        {
          details: { path: this.dir },
        },
      );
    }
    return this.#head;
  }

  #assertChildOfHead(commit: Commit, head: Commit): void {
    if (!bytesEqual(commit.parent, head.hash) || commit.height !== head.height + 1) {
      throw new VersionError(
        'PARENT_MISMATCH',
        `commit ${bytesToHex(commit.hash)} (height ${commit.height}) is not a child of HEAD ${bytesToHex(head.hash)} (height ${head.height})`,
        { details: { commit: bytesToHex(commit.hash), head: bytesToHex(head.hash) } },
      );
    }
  }
}

function preparedName(round: number): string {
  return `${round}.bin`;
}

function corrupt(path: string, problem: string, cause?: unknown): VersionError {
  return new VersionError('STORE_CORRUPT', `${path}: ${problem}`, { cause, details: { path } });
}

function assertHash(name: string, hash: Uint8Array): void {
  if (!(hash instanceof Uint8Array) || hash.length !== HASH_BYTES) {
    throw new InvalidArgumentError(`${name} must be a ${HASH_BYTES}-byte Uint8Array`, { details: { name } });
  }
}

function assertCommit(name: string, commit: Commit): void {
  if (!verifyCommit(commit)) {
    throw new InvalidArgumentError(`${name} must be a commit whose hash verifies`, { details: { name } });
  }
}

/** Throws `MODEL_MISMATCH` unless `parameters` hash to `commit.modelHash`. */
function assertModel(name: string, parameters: Float32Array, commit: Commit): void {
  if (!bytesEqual(modelHash(parameters), commit.modelHash)) {
    throw new VersionError('MODEL_MISMATCH', `${name} do not hash to the commit's modelHash`, {
      details: { name, commit: bytesToHex(commit.hash) },
    });
  }
}
