import { bytesEqual } from '../../../crypto/digest/index.ts';
import { assertInteger } from '../../errors/index.ts';
import type {
  AdminActionBody,
  ControlBodies,
  DecisionBody,
  LogRecordBody,
  PartialRecordBody,
  SnapshotRecordBody,
  ThresholdEpochBody,
  VoteBatchBody,
  VoteRecordBody,
} from '../../protocol/index.ts';
import {
  decodeRegistryChangeBody,
  openRegistryChange,
  type RegistryChangeBody,
  RegistryView,
} from '../../registry/index.ts';
import { epochRoster, type LoggedEpoch, thresholdEpochProblem } from '../../round/index.ts';
import {
  bytesToHex,
  type Commit,
  type CommitKind,
  createCommit,
  hexToBytes,
  verifyCommit,
  ZERO_HASH,
} from '../../versions/index.ts';
import {
  ADMIN_ACTION_ROLLBACK,
  adminActionText,
  type ChainCommit,
  type DecidedRound,
  type LoggedAdminAction,
  type LoggedRegistryChange,
  type LoggedSnapshot,
  type LogHistoryOptions,
  type OpenRound,
  type PendingRollback,
} from './history-records.ts';
import { LOG_ORIGIN, type LogEntry, type LogPosition, recordKind } from './log-entry.ts';
import { FederationLogError } from './log-error.ts';
import { type EvidenceKeys, EvidenceViolation, RoundEvidence } from './round-evidence.ts';

/**
 * The federation's history folded from its log, entry by entry, checking the rules a log must
 * follow (docs/log-format.md, "History rules"): rounds strictly increase; every round is opened
 * (RoundOpen, naming the current head as its base) and then decided exactly once, before the next
 * opens; every decision's parent is the current head; a COMMIT's height is the head's + 1 and its
 * hash is the commit hash of its fields (so its parent link, round and model hash are bound); an
 * ABORT leaves the head; a rollback restores the model of a commit on the chain; a snapshot names a
 * commit on the chain. The chain is linear: commit heights are 0 (genesis), 1, 2, … Any violation
 * is `LOG_HISTORY_INVALID` naming the entry.
 *
 * Apply entries in log order after checking their links (`FederationLogReader.entries` does).
 */
export class LogHistory {
  readonly #commits: ChainCommit[];
  readonly #byHash = new Map<string, number>();
  readonly #snapshots: LoggedSnapshot[] = [];
  /** Decided rounds in log order (the retained ones), and each by its round. */
  readonly #decided: DecidedRound[] = [];
  readonly #decidedIndex = new Map<number, DecidedRound>();
  readonly #retain: number;
  #position: LogPosition = LOG_ORIGIN;
  #lastRound = 0;
  #open: OpenRound | null = null;
  #lastDecision: LogEntry | null = null;
  readonly #stream: string;
  readonly #registryChanges: LoggedRegistryChange[] = [];
  readonly #adminActions: LoggedAdminAction[] = [];
  /** Pending rollback requests, each with how many other rounds opened after it were decided. */
  #pendingRollbacks: { readonly request: PendingRollback; passed: number }[] = [];
  readonly #thresholdEpochs: (LoggedEpoch & { readonly entry: LogEntry })[] = [];
  readonly #keepEvidence: boolean;
  /** Set once any partial or vote record was applied: from then on every decision needs its evidence. */
  #evidence = false;
  /**
   * The registry as of the last entry applied (the pinned registry and every logged change), with
   * its round kept at the round this history is at; undefined without {@link LogHistoryOptions.registry}.
   */
  readonly registry: RegistryView | undefined;

  /** @param genesis the federation's genesis commit (every member computes it from the config). */
  constructor(genesis: Commit, stream = 'log', options: LogHistoryOptions = {}) {
    if (!verifyCommit(genesis) || genesis.kind !== 'genesis') {
      throw new FederationLogError('LOG_HISTORY_INVALID', 'the history must start at a genesis commit');
    }
    this.#stream = stream;
    this.#keepEvidence = options.keepEvidence ?? true;
    this.#retain = options.retainRounds ?? Number.POSITIVE_INFINITY;
    if (this.#retain !== Number.POSITIVE_INFINITY)
      assertInteger('options.retainRounds', this.#retain, 1, 1e9);
    this.registry =
      options.registry === undefined ? undefined : RegistryView.fromRegistry(options.registry.registry);
    this.registry?.setRound(1);
    this.#commits = [{ commit: genesis, sequence: 0, unixMs: 0, decision: null, openSequence: 0 }];
    this.#byHash.set(bytesToHex(genesis.hash), 0);
  }

  /** The last entry applied (sequence 0 before any). */
  get position(): LogPosition {
    return this.#position;
  }

  /** The head: the last commit on the chain. */
  get head(): ChainCommit {
    return this.#commits[this.#commits.length - 1]!;
  }

  /** The highest round any entry named (0 before any). */
  get lastRound(): number {
    return this.#lastRound;
  }

  /** The round opened and not decided yet, if any. */
  get openRound(): OpenRound | null {
    return this.#open;
  }

  /** The last decision entry, if any. */
  get lastDecision(): LogEntry | null {
    return this.#lastDecision;
  }

  /** The decision of `round`, if the log holds one and the history retains it. */
  decisionOf(round: number): DecidedRound | undefined {
    return this.#decidedIndex.get(round);
  }

  /** Every decided round the history retains (all by default), ABORTs included, in log order. */
  get decided(): readonly DecidedRound[] {
    return this.#decided;
  }

  /** The commit at `height` on the chain. */
  commitAt(height: number): ChainCommit | undefined {
    return this.#commits[height];
  }

  /** The chain commit with `hash`, if it is on the chain. */
  commitByHash(hash: Uint8Array): ChainCommit | undefined {
    const height = this.#byHash.get(bytesToHex(hash));
    return height === undefined ? undefined : this.#commits[height];
  }

  /** Snapshots recorded so far, in log order. */
  get snapshots(): readonly LoggedSnapshot[] {
    return this.#snapshots;
  }

  /**
   * The highest snapshot at or below `height` (of two at one height, the later recorded), if any.
   * Snapshots may be recorded out of height order (any site may hand in one of any chain commit).
   */
  snapshotAtOrBelow(height: number): LoggedSnapshot | undefined {
    let best: LoggedSnapshot | undefined;
    for (const s of this.#snapshots) {
      if (s.snapshot.height <= height && (best === undefined || s.snapshot.height >= best.snapshot.height))
        best = s;
    }
    return best;
  }

  /** Registry changes recorded so far, in log order. */
  get registryChanges(): readonly LoggedRegistryChange[] {
    return this.#registryChanges;
  }

  /** Threshold key epochs logged so far (re-sharings), in log order. */
  get thresholdEpochs(): readonly (LoggedEpoch & { readonly entry: LogEntry })[] {
    return this.#thresholdEpochs;
  }

  /** Admin actions recorded so far, in log order. */
  get adminActions(): readonly LoggedAdminAction[] {
    return this.#adminActions;
  }

  /**
   * Rollback requests logged ({@link ADMIN_ACTION_ROLLBACK}) that no rollback round has taken yet,
   * in log order. A rollback round's decision (COMMIT or ABORT) takes the earliest request for its
   * target logged before it; a round aborted because its coordinator stopped names no target and
   * takes none, so the request runs again. A request that two other rounds opened after (and were
   * decided) is dropped: a coordinator runs queued rollbacks first, so it was lost or refused, and
   * running it late would undo the rounds since.
   */
  get pendingRollbacks(): readonly PendingRollback[] {
    return this.#pendingRollbacks.map((r) => r.request);
  }

  /** The round the next registry change would apply from: the round after the last one named. */
  get nextRound(): number {
    return this.#lastRound + 1;
  }

  /** Checks `entry` against the history so far and folds it in; throws `LOG_HISTORY_INVALID`. */
  apply(entry: LogEntry): void {
    const kind = recordKind(entry.record);
    if (kind === 'roundOpen') this.#applyOpen(entry, entry.record.roundOpen!);
    else if (kind === 'decision') this.#applyDecision(entry, entry.record.decision!);
    else if (kind === 'registryChange') this.#applyRegistryChange(entry, entry.record.registryChange!);
    else if (kind === 'adminAction') this.#applyAdminAction(entry, entry.record.adminAction!);
    else if (kind === 'partial') this.#applyPartial(entry, entry.record.partial!);
    else if (kind === 'vote') this.#applyVote(entry, entry.record.vote!);
    else if (kind === 'votes') this.#applyVotes(entry, entry.record.votes!);
    else if (kind === 'thresholdEpoch') this.#applyThresholdEpoch(entry, entry.record.thresholdEpoch!);
    else this.#applySnapshot(entry, entry.record.snapshot!);
    this.#position = { sequence: entry.sequence, hash: entry.hash };
    this.registry?.setRound(this.#open?.roundOpen.round ?? this.#lastRound + 1);
  }

  #invalid(entry: LogEntry, problem: string): FederationLogError {
    return new FederationLogError(
      'LOG_HISTORY_INVALID',
      `log ${this.#stream} entry ${entry.sequence}: ${problem}`,
      {
        details: { stream: this.#stream, sequence: entry.sequence },
      },
    );
  }

  /** An evidence rule broken: `details.rule` names it, `details.at` the record at fault. */
  #violated(entry: LogEntry, v: EvidenceViolation): FederationLogError {
    return new FederationLogError(
      'LOG_HISTORY_INVALID',
      `log ${this.#stream} entry ${entry.sequence}: ${v.message}`,
      { details: { stream: this.#stream, sequence: entry.sequence, rule: v.rule, at: v.at } },
    );
  }

  /** Member keys in force and roles, when the history has the registry (signatures are then checked). */
  #evidenceKeys(): EvidenceKeys | undefined {
    const view = this.registry;
    if (view === undefined) return undefined;
    return { key: (id) => view.current(id), role: (id) => view.role(id) };
  }

  #evidenceOf(entry: LogEntry, what: string, round: number): RoundEvidence {
    const open = this.#open;
    if (open === null || open.roundOpen.round !== round) {
      throw this.#invalid(
        entry,
        `${what} of round ${round}, ${open === null ? 'no round is open' : `round ${open.roundOpen.round} is open`}`,
      );
    }
    return open.evidence;
  }

  /** A partial the coordinator accepted: of the open round and attempt, signed by the aggregator assigned its sites. */
  #applyPartial(entry: LogEntry, p: PartialRecordBody): void {
    const evidence = this.#evidenceOf(entry, 'partial', p.round);
    try {
      evidence.addPartial(entry, p, this.#evidenceKeys());
    } catch (err) {
      if (err instanceof EvidenceViolation) throw this.#violated(entry, err);
      throw err;
    }
    this.#evidence = true;
  }

  /** A vote the coordinator counted: of the open round and attempt, one per member, signed by it. */
  #applyVote(entry: LogEntry, v: VoteRecordBody): void {
    const evidence = this.#evidenceOf(entry, 'vote', v.round);
    try {
      evidence.addVote(entry, v, this.#evidenceKeys());
    } catch (err) {
      if (err instanceof EvidenceViolation) throw this.#violated(entry, err);
      throw err;
    }
    this.#evidence = true;
  }

  /** Votes the coordinator counted, batched in one entry: each checked as {@link #applyVote} checks one. */
  #applyVotes(entry: LogEntry, b: VoteBatchBody): void {
    const evidence = this.#evidenceOf(entry, 'votes', b.round);
    try {
      evidence.addVotes(entry, b, this.#evidenceKeys());
    } catch (err) {
      if (err instanceof EvidenceViolation) throw this.#violated(entry, err);
      throw err;
    }
    this.#evidence = true;
  }

  #applyOpen(entry: LogEntry, open: ControlBodies['round-open']): void {
    if (this.#open !== null) {
      throw this.#invalid(
        entry,
        `opens round ${open.round} while round ${this.#open.roundOpen.round} is undecided`,
      );
    }
    if (!(open.round > this.#lastRound)) {
      throw this.#invalid(entry, `opens round ${open.round}, not after round ${this.#lastRound}`);
    }
    const head = this.head.commit;
    if (!bytesEqual(open.baseCommit, head.hash) || open.version !== head.height) {
      throw this.#invalid(
        entry,
        `round ${open.round} is based on ${short(open.baseCommit)} (height ${open.version}), the head is ${short(head.hash)} (height ${head.height})`,
      );
    }
    this.#open = { entry, roundOpen: open, evidence: new RoundEvidence(open) };
    this.#lastRound = open.round;
  }

  #applyDecision(entry: LogEntry, d: DecisionBody): void {
    const open = this.#open;
    if (open === null || d.round !== open.roundOpen.round) {
      throw this.#invalid(
        entry,
        open === null
          ? `decides round ${d.round}, which was never opened (last round ${this.#lastRound})`
          : `decides round ${d.round} while round ${open.roundOpen.round} is open`,
      );
    }
    const head = this.head.commit;
    if (!bytesEqual(d.parent, head.hash)) {
      throw this.#invalid(
        entry,
        `decision of round ${d.round} has parent ${short(d.parent)}, the head is ${short(head.hash)}`,
      );
    }
    if (d.commit) {
      if (d.height !== head.height + 1) {
        throw this.#invalid(
          entry,
          `COMMIT of round ${d.round} at height ${d.height}, expected ${head.height + 1}`,
        );
      }
      const kind = d.kind as CommitKind;
      if (kind !== 'round' && kind !== 'rollback' && kind !== 'statistics') {
        throw this.#invalid(entry, `COMMIT of round ${d.round} has kind ${JSON.stringify(d.kind)}`);
      }
      if (kind === 'rollback') {
        const target = this.commitByHash(d.rollbackTarget);
        if (target === undefined) {
          throw this.#invalid(entry, `rollback to ${short(d.rollbackTarget)}, which is not on the chain`);
        }
        if (!bytesEqual(target.commit.modelHash, d.modelHash)) {
          throw this.#invalid(entry, `rollback to height ${target.commit.height} names another model hash`);
        }
      } else if (d.aggregate === null || d.aggregateDigest.length !== 32) {
        throw this.#invalid(entry, `COMMIT of round ${d.round} names no aggregate`);
      } else if (kind === 'statistics' && !bytesEqual(d.modelHash, head.modelHash)) {
        throw this.#invalid(entry, `statistics COMMIT of round ${d.round} changes the model`);
      }
      if (d.evaluation != null && !bytesEqual(d.evaluation.model, head.hash)) {
        throw this.#invalid(
          entry,
          `COMMIT of round ${d.round} records an evaluation of another model than its parent`,
        );
      }
      this.#checkEvidence(entry, open, d);
      let commit: Commit;
      try {
        commit = createCommit({
          parent: head.hash,
          height: d.height,
          round: d.round,
          aggregateDigest: kind === 'rollback' ? ZERO_HASH : d.aggregateDigest,
          modelHash: d.modelHash,
          params: d.params,
          kind,
        });
      } catch (err) {
        throw this.#invalid(
          entry,
          `COMMIT of round ${d.round} has unusable fields: ${(err as Error).message}`,
        );
      }
      if (!bytesEqual(commit.hash, d.commitHash)) {
        throw this.#invalid(
          entry,
          `COMMIT of round ${d.round} names hash ${short(d.commitHash)}, its fields hash to ${short(commit.hash)}`,
        );
      }
      this.#commits.push({
        commit,
        sequence: entry.sequence,
        unixMs: entry.record.unixMs,
        decision: d,
        openSequence: open.entry.sequence,
      });
      this.#byHash.set(bytesToHex(commit.hash), commit.height);
      const old = this.#commits[commit.height - this.#retain];
      if (old !== undefined && old.decision !== null)
        this.#commits[commit.height - this.#retain] = { ...old, decision: null };
    } else {
      this.#checkEvidence(entry, open, d);
      if (d.height !== head.height) {
        throw this.#invalid(
          entry,
          `ABORT of round ${d.round} at height ${d.height}, the head is at ${head.height}`,
        );
      }
      if (d.commitHash.length !== 0)
        throw this.#invalid(entry, `ABORT of round ${d.round} names a commit hash`);
    }
    if (d.rollbackTarget.length > 0) {
      const taken = this.#pendingRollbacks.findIndex((r) => bytesEqual(r.request.target, d.rollbackTarget));
      if (taken >= 0) this.#pendingRollbacks.splice(taken, 1);
    } else {
      // A coordinator runs a queued rollback before any other round; a request that another round
      // opened after, twice, was lost (a coordinator before requests were durable) or dropped
      // (its target no longer below the head). Restarting it now would undo the rounds since.
      for (const r of this.#pendingRollbacks) if (r.request.entry.sequence < open.entry.sequence) r.passed++;
      this.#pendingRollbacks = this.#pendingRollbacks.filter((r) => r.passed < 2);
    }
    this.#open = null;
    this.#lastRound = d.round;
    this.#lastDecision = entry;
    const decided: DecidedRound = {
      round: d.round,
      sequence: entry.sequence,
      unixMs: entry.record.unixMs,
      decision: d,
      open: open.roundOpen,
      openSequence: open.entry.sequence,
      partials: this.#keepEvidence ? open.evidence.partials : [],
      votes: this.#keepEvidence ? [...open.evidence.votes.values()] : [],
    };
    this.#decidedIndex.set(d.round, decided);
    this.#decided.push(decided);
    if (this.#decided.length > this.#retain) this.#decidedIndex.delete(this.#decided.shift()!.round);
  }

  #checkEvidence(entry: LogEntry, open: OpenRound, d: DecisionBody): void {
    try {
      open.evidence.checkDecision(entry, d, this.#evidence);
    } catch (err) {
      if (err instanceof EvidenceViolation) throw this.#violated(entry, err);
      throw err;
    }
  }

  #applyRegistryChange(entry: LogEntry, record: NonNullable<LogRecordBody['registryChange']>): void {
    if (this.#open !== null) {
      throw this.#invalid(entry, `registry change while round ${this.#open.roundOpen.round} is open`);
    }
    let change: RegistryChangeBody;
    try {
      const officer = this.registry?.officerKey;
      change =
        officer === undefined ? decodeRegistryChangeBody(record.body) : openRegistryChange(record, officer);
    } catch (err) {
      throw this.#invalid(entry, `registry change refused: ${(err as Error).message}`);
    }
    const next = this.#lastRound + 1;
    if (change.federation !== entry.record.federation) {
      throw this.#invalid(entry, `registry change for federation ${JSON.stringify(change.federation)}`);
    }
    if (change.fromRound !== next) {
      throw this.#invalid(
        entry,
        `${change.kind} ${change.member} from round ${change.fromRound}, logged before round ${next}`,
      );
    }
    try {
      this.registry?.apply(change, next, true, entry.sequence);
    } catch (err) {
      throw this.#invalid(entry, `registry change refused: ${(err as Error).message}`);
    }
    this.#registryChanges.push({ entry, change });
  }

  /**
   * A re-shared key epoch: logged between rounds, from the next round, of a later generation than
   * the last, every roster site's ready signed (checked when the history has the registry).
   */
  #applyThresholdEpoch(entry: LogEntry, record: ThresholdEpochBody): void {
    if (this.#open !== null) {
      throw this.#invalid(entry, `threshold epoch while round ${this.#open.roundOpen.round} is open`);
    }
    const next = this.#lastRound + 1;
    if (record.fromRound !== next) {
      throw this.#invalid(
        entry,
        `threshold epoch from round ${record.fromRound}, logged before round ${next}`,
      );
    }
    const last = this.#thresholdEpochs[this.#thresholdEpochs.length - 1];
    if (last !== undefined && record.generation <= last.roster.generation) {
      throw this.#invalid(
        entry,
        `threshold epoch of generation ${record.generation} after generation ${last.roster.generation}`,
      );
    }
    const view = this.registry;
    const problem = thresholdEpochProblem(
      record,
      entry.record.federation,
      view === undefined
        ? undefined
        : {
            keys: (id) => view.current(id),
            enrolledSite: (id, round) => view.role(id) === 'site' && !view.isRevoked(id, round),
          },
    );
    if (problem !== undefined) throw this.#invalid(entry, problem);
    this.#thresholdEpochs.push({
      roster: epochRoster(entry.record.federation, record),
      epochId: record.epochId,
      fromRound: record.fromRound,
      entry,
    });
  }

  /**
   * An admin action changes no history state (its effect, if any, is a later record of its own);
   * it must name its action and caller, so that every logged action is attributable.
   */
  #applyAdminAction(entry: LogEntry, a: AdminActionBody): void {
    if (typeof a.action !== 'string' || a.action.length === 0) {
      throw this.#invalid(entry, 'admin action names no action');
    }
    if (typeof a.caller !== 'string' || a.caller.length === 0) {
      throw this.#invalid(entry, `admin action ${JSON.stringify(a.action)} names no caller`);
    }
    this.#adminActions.push({ entry, action: a });
    if (a.action === ADMIN_ACTION_ROLLBACK && /^[0-9a-f]{64}$/.test(a.target)) {
      this.#pendingRollbacks.push({
        request: {
          entry,
          target: hexToBytes('target', a.target, 32),
          reason: adminActionText(a, 'reason') ?? '',
        },
        passed: 0,
      });
    }
  }

  #applySnapshot(entry: LogEntry, s: SnapshotRecordBody): void {
    const at = this.#commits[s.height];
    if (at === undefined || !bytesEqual(at.commit.hash, s.commitHash)) {
      throw this.#invalid(
        entry,
        `snapshot of ${short(s.commitHash)} at height ${s.height}, which is not on the chain`,
      );
    }
    this.#snapshots.push({ entry, snapshot: s });
  }
}

function short(hash: Uint8Array): string {
  return hash.length === 0 ? '(none)' : bytesToHex(hash).slice(0, 12);
}
