import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { bytesEqual } from '../../crypto/digest/index.ts';
import type { StrategyState } from '../../federation/strategy/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import {
  fileExists,
  listDir,
  readFileOrNull,
  removeFileDurable,
  removeTempFiles,
  syncDir,
  writeFileAtomic,
} from './atomic-file.ts';
import type { Commit } from './commit.ts';
import { decodeCommit, encodeCommit } from './commit-codec.ts';
import { bytesToHex } from './hex.ts';
import { assertLogCursor, type LogCursor, logCursorFileParts, readLogCursorFile } from './log-cursor-file.ts';
import { modelFileParts, readModelFile } from './model-file.ts';
import { modelHash } from './model-hash.ts';
import type { ModelStore } from './model-store.ts';
import { type PreparedCandidate, preparedFileParts, readPreparedFile } from './prepared-file.ts';
import { ResidualFiles } from './residual-files.ts';
import { readShallowFile, shallowFileParts } from './shallow-file.ts';
import { readStateFile, stateFileParts } from './state-file.ts';
import { assertCandidate, assertCommit, assertHash, assertModel } from './store-arguments.ts';
import { VersionError } from './version-error.ts';

const HEAD_FILE = 'HEAD';
const STATE_FILE = 'strategy-state.bin';
const SHALLOW_FILE = 'shallow';
const LOG_CURSOR_FILE = 'log-cursor.bin';
const MODEL_NAME = /^([0-9a-f]{64})\.f32$/;
const PREPARED_NAME = /^(0|[1-9][0-9]{0,15})\.bin$/;
const HEAD_CONTENT = /^([0-9a-f]{64})\n$/;

/** The {@link ModelStore} over a directory; see the interface for the layout and the guarantees. */
export class DirectoryModelStore implements ModelStore {
  readonly dir: string;
  readonly #models: string;
  readonly #commits: string;
  readonly #prepared: string;
  readonly #residuals: ResidualFiles;
  #head: Commit | null;

  constructor(dir: string) {
    this.dir = dir;
    this.#models = join(dir, 'models');
    this.#commits = join(dir, 'commits');
    this.#prepared = join(dir, 'prepared');
    this.#residuals = new ResidualFiles(dir);
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
    const path = this.#commitPath(hash);
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

  hasCommit(hash: Uint8Array): boolean {
    assertHash('hash', hash);
    return fileExists(this.#commitPath(hash));
  }

  hasModel(commit: Commit): boolean {
    assertCommit('commit', commit);
    return fileExists(this.#modelPath(commit.modelHash));
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
    assertCandidate('candidate', candidate);
    const { commit } = candidate;
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
      this.#switchTo(candidate);
    }
    this.#finish(candidate);
    return commit;
  }

  abortPrepared(round: number): boolean {
    assertInteger('round', round, 0, Number.MAX_SAFE_INTEGER);
    return removeFileDurable(this.#prepared, preparedName(round));
  }

  advance(candidate: PreparedCandidate): Commit {
    assertCandidate('candidate', candidate);
    const { commit } = candidate;
    const head = this.#requireHead();
    if (!bytesEqual(head.hash, commit.hash)) {
      this.#assertChildOfHead(commit, head);
      this.#switchTo(candidate);
    }
    this.#settle(candidate);
    return this.#requireHead();
  }

  jumpTo(candidate: PreparedCandidate): Commit {
    assertCandidate('candidate', candidate);
    const { commit } = candidate;
    const head = this.#head;
    if (head === null || !bytesEqual(head.hash, commit.hash)) {
      if (head !== null && commit.height <= head.height) {
        throw new VersionError(
          'JUMP_BACKWARDS',
          `cannot jump to commit ${bytesToHex(commit.hash)} at height ${commit.height}: HEAD ${bytesToHex(head.hash)} is at height ${head.height}`,
          {
            details: { commit: bytesToHex(commit.hash), head: bytesToHex(head.hash), height: commit.height },
          },
        );
      }
      this.#switchTo(candidate, commit.kind !== 'genesis');
    }
    this.#settle(candidate);
    return this.#requireHead();
  }

  isShallow(hash: Uint8Array): boolean {
    assertHash('hash', hash);
    return this.#readShallow().some((boundary) => bytesEqual(boundary, hash));
  }

  shallowCommits(): Uint8Array[] {
    return this.#readShallow();
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
    this.#residuals.save(residual);
  }

  loadResidual(): Float32Array | null {
    return this.#residuals.load();
  }

  stageResidual(round: number, residual: Float32Array): void {
    this.#residuals.stage(round, residual);
  }

  pendingResidualRounds(): number[] {
    return this.#residuals.pendingRounds();
  }

  resolveResidual(round: number, apply: boolean): boolean {
    return this.#residuals.resolve(round, apply);
  }

  clearResidual(): void {
    this.#residuals.clear();
  }

  saveStrategyState(state: StrategyState): void {
    const head = this.#requireHead();
    this.#writeState(head, state);
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

  saveLogCursor(cursor: LogCursor): void {
    assertLogCursor('cursor', cursor);
    writeFileAtomic(this.dir, LOG_CURSOR_FILE, logCursorFileParts(cursor));
  }

  logCursor(): LogCursor | null {
    const path = join(this.dir, LOG_CURSOR_FILE);
    const bytes = readFileOrNull(path);
    return bytes === null ? null : readLogCursorFile(bytes, path);
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

  #commitPath(hash: Uint8Array): string {
    return join(this.#commits, `${bytesToHex(hash)}.commit`);
  }

  #writeModel(hash: Uint8Array, parameters: Float32Array): void {
    writeFileAtomic(this.#models, `${bytesToHex(hash)}.f32`, modelFileParts(parameters));
  }

  #writeCommit(commit: Commit): void {
    writeFileAtomic(this.#commits, `${bytesToHex(commit.hash)}.commit`, [encodeCommit(commit)]);
  }

  #writeState(commit: Commit, state: StrategyState): void {
    writeFileAtomic(this.dir, STATE_FILE, stateFileParts({ commit: commit.hash, state }));
  }

  #swapHead(commit: Commit): void {
    writeFileAtomic(this.dir, HEAD_FILE, [new TextEncoder().encode(`${bytesToHex(commit.hash)}\n`)]);
    this.#head = commit;
  }

  /**
   * Makes `candidate` HEAD: its model and commit become durable, then (for a jump) it joins the
   * shallow list, then HEAD is swapped by one rename, the switch. The strategy state is not written.
   */
  #switchTo(candidate: PreparedCandidate, shallow = false): void {
    const { commit } = candidate;
    this.#writeModel(commit.modelHash, candidate.parameters);
    this.#writeCommit(commit);
    if (shallow) this.#addShallow(commit.hash);
    this.#swapHead(commit);
  }

  /** The steps of a commit after the HEAD swap: strategy state, then the prepared file goes. */
  #finish(candidate: PreparedCandidate): void {
    this.#writeState(candidate.commit, candidate.strategyState);
    removeFileDurable(this.#prepared, preparedName(candidate.commit.round));
  }

  /**
   * The steps of `advance`/`jumpTo` after the HEAD swap: the strategy state, then a prepared file
   * holding the same commit goes (so a later open does not finish it with its own state). A prepared
   * file of another commit, or one that does not verify, is left for the agent.
   */
  #settle(candidate: PreparedCandidate): void {
    const { commit } = candidate;
    this.#writeState(commit, candidate.strategyState);
    const prepared = this.#readPreparedOrNull(commit.round, true);
    if (prepared !== null && bytesEqual(prepared.commit.hash, commit.hash)) {
      removeFileDurable(this.#prepared, preparedName(commit.round));
    }
  }

  #readShallow(): Uint8Array[] {
    const path = join(this.dir, SHALLOW_FILE);
    const bytes = readFileOrNull(path);
    return bytes === null ? [] : readShallowFile(bytes, path);
  }

  /** Durably adds `hash` to the shallow list (a no-op when listed). */
  #addShallow(hash: Uint8Array): void {
    const hashes = this.#readShallow();
    if (hashes.some((boundary) => bytesEqual(boundary, hash))) return;
    writeFileAtomic(this.dir, SHALLOW_FILE, shallowFileParts([...hashes, hash]));
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

  /** The parent of `commit`, or `null` when it is not stored and `commit` is a shallow boundary. */
  #readParent(commit: Commit): Commit | null {
    try {
      return this.readCommit(commit.parent);
    } catch (cause) {
      if (cause instanceof VersionError && cause.code === 'COMMIT_UNKNOWN') {
        if (this.isShallow(commit.hash)) return null;
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
        `store ${this.dir} has no HEAD; call init (genesis) or jumpTo (snapshot) first`,
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
