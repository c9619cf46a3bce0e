import { resolve } from 'node:path';
import type { StrategyState } from '../../federation/strategy/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { Commit } from './commit.ts';
import { DirectoryModelStore } from './directory-model-store.ts';
import type { LogCursor } from './log-cursor-file.ts';
import type { PreparedCandidate } from './prepared-file.ts';

/**
 * A site agent's durable store of model versions (docs/round-protocol.md, step 7 and "Catch-up,
 * snapshots, recovery"). Layout under `dir`:
 *
 * - `models/<modelHashHex>.f32`: models, shared by every commit with that `modelHash`;
 * - `commits/<hashHex>.commit`: every commit since genesis, or since a shallow boundary (`encodeCommit`);
 * - `HEAD`: the current commit's hash in hex and a newline;
 * - `shallow`: boundary commits, whose ancestors the store need not hold (a store started from a
 *   snapshot, like a git shallow clone);
 * - `prepared/<round>.bin`: a candidate written on PREPARE (commit, model, strategy state);
 * - `residual.f32`: the error-feedback residual; `pending-residual-<round>.f32`: the residual a
 *   round will leave if it commits;
 * - `strategy-state.bin`: HEAD's strategy state, tagged with HEAD's hash;
 * - `log-cursor.bin`: the last federation log entry the site applied.
 *
 * Every write is atomic (temporary file, fsync, rename, directory fsync) and every read verified.
 * HEAD moves only by replacing the `HEAD` file after the new model and commit are durable: a crash
 * at any point leaves the old HEAD or the new one, never a half-written model. The strategy state
 * is written after the HEAD swap, so a crash between the two leaves a state tagged with the old
 * HEAD: {@link ModelStore.loadStrategyState} reports `STATE_STALE` until the step that moved HEAD
 * is applied again (it is idempotent). One store instance per directory: the instance caches HEAD,
 * and the store takes no lock.
 *
 * Failures are {@link VersionError}s (`STORE_CORRUPT`, `STORE_IO`, …) or `INVALID_ARGUMENT`
 * naming the argument.
 */
export interface ModelStore {
  /** The store directory, absolute. */
  readonly dir: string;
  /** The current commit, or `null` before {@link ModelStore.init} or {@link ModelStore.jumpTo}. */
  head(): Commit | null;
  /** The stored commit with `hash`. Throws `COMMIT_UNKNOWN`, or `STORE_CORRUPT` when it fails to verify. */
  readCommit(hash: Uint8Array): Commit;
  /**
   * True when a commit with `hash` is stored (its file exists; not read, not verified: use
   * {@link ModelStore.readCommit} for that). A replaying agent skips log entries whose commit it holds.
   */
  hasCommit(hash: Uint8Array): boolean;
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
  /**
   * Applies a decided commit without a prepared file (catch-up by replaying the log). Order: model,
   * commit, HEAD swap (the switch, one rename), then the strategy state tagged with the new HEAD,
   * then a prepared file holding this same commit (if any) is discarded.
   *
   * Invariants: `candidate.commit` verifies (`INVALID_ARGUMENT`), is a child of HEAD (parent hash
   * and height + 1, else `PARENT_MISMATCH`; no HEAD is `NOT_INITIALIZED`), and the parameters hash
   * to its `modelHash` (`MODEL_MISMATCH`); nothing is written when a check fails. Idempotent: when
   * HEAD already is `candidate.commit` only the strategy state is (re)written and HEAD returned, which
   * repairs a crash between the HEAD swap and the state write (seen as `STATE_STALE` meanwhile).
   * Prepared candidates of other commits and residuals are left alone. Returns the new HEAD.
   */
  advance(candidate: PreparedCandidate): Commit;
  /**
   * Moves HEAD to a commit from a snapshot (a new or long-absent site), which need not descend from
   * HEAD and whose ancestors need not be stored. Order: model, commit, the commit added to the
   * `shallow` list (unless it is a genesis commit), HEAD swap (one rename), strategy state, then a
   * prepared file holding this same commit (if any) is discarded. {@link ModelStore.history} stops
   * at a shallow commit whose parent is not stored.
   *
   * Invariants: `candidate.commit` verifies and its parameters hash to its `modelHash`
   * (`MODEL_MISMATCH`); the store has no HEAD, or the commit's height is above HEAD's
   * (`JUMP_BACKWARDS` otherwise; nothing is written). Whether the commit belongs to the federation is
   * the caller's check (a verified snapshot and log entry). Idempotent like {@link ModelStore.advance}:
   * when HEAD already is `candidate.commit` only the strategy state is (re)written. A crash before
   * the HEAD swap leaves the old HEAD and, at most, an unused shallow entry (harmless: it only lets a
   * history walk stop there if that commit's parent is missing). Prepared candidates built on the old
   * HEAD stay and will fail `commitPrepared` with `PARENT_MISMATCH`: abort them. Returns the new HEAD.
   */
  jumpTo(candidate: PreparedCandidate): Commit;
  /** True when `hash` is recorded in the `shallow` list (by {@link ModelStore.jumpTo}). */
  isShallow(hash: Uint8Array): boolean;
  /** The shallow boundary commits' hashes, in the order they were recorded (fresh arrays). */
  shallowCommits(): Uint8Array[];
  /**
   * Up to `limit` commits from HEAD back towards genesis, HEAD first. The walk stops after genesis,
   * or after a shallow commit whose parent is not stored; any other missing parent is `STORE_CORRUPT`.
   */
  history(limit: number): Commit[];
  /** Durably replaces the error-feedback residual (finite values). Prefer staging per round. */
  saveResidual(residual: Float32Array): void;
  /** The residual, verified, or `null` when none was saved. */
  loadResidual(): Float32Array | null;
  /**
   * Durably writes the residual that round `round` leaves if it commits (finite values), as a
   * pending file; `residual.f32` is unchanged. One per round: staging a round again replaces it.
   */
  stageResidual(round: number, residual: Float32Array): void;
  /** Rounds with a staged residual not yet resolved, ascending (a restarted agent must resolve each). */
  pendingResidualRounds(): number[];
  /**
   * Resolves the residual staged for `round`. `apply` (the round committed): the pending file is
   * verified (`STORE_CORRUPT` otherwise, nothing changes) and renamed over `residual.f32`, one step
   * that makes it the residual and removes it as pending, so a crash leaves the old residual with
   * the pending file or the new residual without it. `!apply` (aborted): the pending file is removed
   * and the residual stays. Returns false when nothing is pending for `round`, so resolving again
   * after success or after a crash past the rename changes nothing. Resolve rounds in order: applying
   * an older round after a newer one replaces the newer residual.
   */
  resolveResidual(round: number, apply: boolean): boolean;
  /** Durably removes `residual.f32` (a rollback invalidates it); pending residuals stay. */
  clearResidual(): void;
  /** Durably replaces the strategy state, recorded as HEAD's (`NOT_INITIALIZED` without HEAD). */
  saveStrategyState(state: StrategyState): void;
  /** HEAD's strategy state, or `null` when none was saved; `STATE_STALE` when it belongs to another commit. */
  loadStrategyState(): StrategyState | null;
  /**
   * Durably replaces the log cursor: the sequence (safe integer ≥ 0) and 32-byte hash of the last
   * federation log entry the site applied. Not checked against the previous cursor.
   */
  saveLogCursor(cursor: LogCursor): void;
  /** The log cursor, verified (`STORE_CORRUPT` otherwise), or `null` when none was saved. */
  logCursor(): LogCursor | null;
  /**
   * Deletes every model file but those of the last `keep` commits (HEAD included, `keep` ≥ 1).
   * Returns the removed models' hashes in hex, sorted. Commits are kept.
   */
  pruneModels(keep: number): string[];
}

/**
 * Opens (creating if needed) the store in `dir`. Removes temporary files of interrupted writes,
 * verifies HEAD (a shallow HEAD included) and finishes a commit interrupted after its HEAD swap (a
 * prepared candidate whose commit already is HEAD).
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
