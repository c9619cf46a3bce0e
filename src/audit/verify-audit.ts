import { type CkksParams, DEFAULT_CKKS_PARAMS } from '../../crypto/ckks/index.ts';
import { bytesEqual, sha256 } from '../../crypto/digest/index.ts';
import { assertInteger } from '../errors/index.ts';
import { type ControlBodies, type DecisionBody, openControl } from '../protocol/index.ts';
import { openRegistryChange, type VerifiedRegistry } from '../registry/index.ts';
import { decodeRoundParams, type RoundRobust } from '../round/index.ts';
import {
  FederationLogError,
  LOG_ORIGIN,
  type LogEntry,
  LogHistory,
  type LogPosition,
  recordKind,
} from '../services/federation-log/index.ts';
import {
  bytesToHex,
  type Commit,
  type CommitKind,
  createCommit,
  verifyCommit,
  ZERO_HASH,
} from '../versions/index.ts';
import { checkAggregate } from './aggregate-check.ts';
import { bundleSealValid } from './audit-bundle.ts';
import { AuditError } from './audit-error.ts';
import {
  type AuditCheckCounts,
  type AuditProblem,
  type AuditProblemCode,
  type AuditReport,
  type AuditRound,
  type AuditUnchecked,
  auditIncomplete,
} from './audit-report.ts';
import type { AuditSource } from './audit-source.ts';
import type { BundleAuditSource } from './bundle-source.ts';
import { checkCulprits } from './culprit-check.ts';
import { openStoredEntry } from './open-entry.ts';
import { PrivacyTrail } from './privacy-trail.ts';
import { type LoggedPartialRecord, recomputeAggregate } from './recompute-check.ts';

/** What the auditor trusts: the member registry (the coordinator's and the officer's keys) and the genesis commit. */
export interface AuditTrust {
  /** The federation's signed member registry, verified (pinned by its SHA-256). */
  readonly registry: VerifiedRegistry;
  /** The federation's genesis commit (computed from the configuration, or pinned by its hash). */
  readonly genesis: Commit;
}

/** Options of {@link verifyAudit}. */
export interface AuditOptions {
  /** Do not read aggregates (each is listed as `AGGREGATE_SKIPPED`, and not re-added); default false. */
  readonly skipAggregates?: boolean;
  /**
   * Do not read contributions (each aggregate is checked but not re-added, listed as
   * `CONTRIBUTIONS_SKIPPED`); default false. Without it, contributions that cannot be read make
   * the audit incomplete.
   */
  readonly skipContributions?: boolean;
  /**
   * The federation's `history.updateRetentionMs`: a contribution gone from a round that ended
   * more than this before the evidence was read is listed as expired (`CONTRIBUTIONS_EXPIRED`).
   * Absent or 0: every contribution the log lists must be there (`CONTRIBUTION_NOT_STORED`).
   */
  readonly contributionRetentionMs?: number;
  /**
   * CKKS parameter sets to re-add contributions with (the one whose id a decision's encoding names
   * is used); default: Cohort's default parameters. Pass the configuration's `crypto.ckks`.
   */
  readonly ckksParams?: readonly CkksParams[];
  /** The auditor's clock (default `Date.now`): evidence is never taken as read later than this. */
  readonly now?: () => number;
}

/** The problem code of a history-rule refusal, by the kind of record refused. */
const RULE_CODES: Readonly<Record<string, AuditProblemCode>> = {
  roundOpen: 'ROUND_OPEN_INVALID',
  decision: 'DECISION_INVALID',
  snapshot: 'SNAPSHOT_INVALID',
  registryChange: 'REGISTRY_CHANGE_INVALID',
  adminAction: 'ADMIN_ACTION_INVALID',
  partial: 'PARTIAL_INVALID',
  vote: 'VOTE_INVALID',
  votes: 'VOTE_INVALID',
  thresholdEpoch: 'THRESHOLD_EPOCH_INVALID',
};

const EVIDENCE_CODES: ReadonlySet<string> = new Set([
  'PARTIAL_INVALID',
  'VOTE_INVALID',
  'VOTE_MODEL_MISMATCH',
  'CONTRIBUTION_MISSING',
  'CONTRIBUTION_DUPLICATE',
  'CONTRIBUTION_MISMATCH',
  'DECISION_INVALID',
]);

type MutableCounts = { -readonly [K in keyof AuditCheckCounts]: number };

/**
 * Audits a federation's log as `source` holds it, trusting only `trust`. Every stored entry, in
 * sequence order:
 * 1. its frame and signature: `openLogEntry` with the coordinator's key in force at its position
 *    (the pinned registry with the registry changes logged before it), size-capped before decoding;
 * 2. its sequence (`SEQUENCE_MISMATCH`, `SEQUENCE_GAP` at the entry after a gap naming both
 *    sequences) and its link to the previous stored entry (`CHAIN_BROKEN`);
 * 3. a COMMIT's hash recomputed from its own fields (`COMMIT_HASH_MISMATCH`);
 * 4. the history rules 1–6 (`LogHistory`), each refusal coded by the record's kind;
 * 5. a COMMIT's aggregate read from the store ({@link checkAggregate});
 * then the log's last sequence (`LOG_TRUNCATED` when entries are missing at its end).
 *
 * The history rules stop at the first entry that fails any check: later entries would be judged
 * against a history with a hole, and every rule would only repeat the first problem. Every later
 * entry still gets checks 1–3 and 5 (a registry change its officer signature), so one audit lists
 * every forged, altered or misplaced entry; `historyThrough` says how far the rules went.
 *
 * A bundle must hold no more than the log names: an object or a contribution no verified entry
 * asks for, in an audit that is otherwise complete and found no problem, refuses the bundle
 * (someone added it).
 *
 * @throws AuditError `AUDIT_TRUST_MISSING` when the registry lists no coordinator; `BUNDLE_INVALID`
 *   for a bundle holding items the log names nowhere; a source's error when the log cannot be read.
 */
export async function verifyAudit(
  source: AuditSource,
  trust: AuditTrust,
  options: AuditOptions = {},
): Promise<AuditReport> {
  const coordinator = trust.registry.registry.members.find((m) => m.role === 'coordinator')?.id;
  if (coordinator === undefined) {
    throw new AuditError('AUDIT_TRUST_MISSING', 'the trusted member registry lists no coordinator');
  }
  if (!verifyCommit(trust.genesis) || trust.genesis.kind !== 'genesis') {
    throw new AuditError('AUDIT_TRUST_MISMATCH', 'the trusted genesis is not a genesis commit');
  }
  if (options.contributionRetentionMs !== undefined) {
    assertInteger(
      'options.contributionRetentionMs',
      options.contributionRetentionMs,
      0,
      Number.MAX_SAFE_INTEGER,
    );
  }
  const run = new AuditRun(source, trust, coordinator, options);
  const last = await source.lastSequence();
  for await (const stored of source.entries(last)) await run.entry(stored.sequence, stored.bytes);
  const report = run.finish(last);
  const extra = unrequestedItems(source, options);
  // Only a clean audit asked for everything the log names (an incomplete one stops early).
  if (report.problems.length === 0 && !auditIncomplete(report) && extra.length > 0) {
    throw new AuditError(
      'BUNDLE_INVALID',
      `the bundle holds ${extra.length} item(s) no log entry names (${extra.slice(0, 3).join(', ')}${extra.length > 3 ? ', …' : ''})`,
      { details: { items: extra.slice(0, 100) } },
    );
  }
  return report;
}

/** A bundle's objects and contributions the audit did not ask for (of the kinds it read). */
function unrequestedItems(source: AuditSource, options: AuditOptions): string[] {
  if (source.kind !== 'bundle' || options.skipAggregates === true) return [];
  const unrequested = (source as Partial<BundleAuditSource>).unrequested;
  if (typeof unrequested !== 'function') return [];
  const items = unrequested.call(source);
  return options.skipContributions === true ? items.filter((i) => !i.startsWith('contribution ')) : items;
}

class AuditRun {
  readonly #source: AuditSource;
  readonly #trust: AuditTrust;
  readonly #options: AuditOptions;
  readonly #history: LogHistory;
  readonly #coordinator: string;
  readonly #problems: AuditProblem[] = [];
  readonly #unchecked: AuditUnchecked[] = [];
  readonly #rounds: AuditRound[] = [];
  readonly #counts: MutableCounts = {
    signatures: 0,
    links: 0,
    historyRules: 0,
    commitHashes: 0,
    aggregates: 0,
    registryChanges: 0,
    snapshots: 0,
    adminActions: 0,
    partials: 0,
    votes: 0,
    contributions: 0,
    recomputed: 0,
    privacyRecords: 0,
    robustAggregates: 0,
    culprits: 0,
    uncheckedKinds: 0,
  };
  readonly #privacy = new PrivacyTrail();
  /** Each round's RoundOpen and partial records, as opened (kept past the history rules, for the recomputation). */
  readonly #opens = new Map<number, ControlBodies['round-open']>();
  readonly #partials = new Map<number, LoggedPartialRecord[]>();
  /** Each round's logged votes of its attempt, by voter (a culprit's evidence may be one). */
  readonly #votes = new Map<number, Map<string, ControlBodies['vote']>>();
  #previous: LogPosition = LOG_ORIGIN;
  #entries = 0;
  #folding = true;
  #historyThrough = 0;
  /** Set after the first unreadable aggregate: the others are not tried (each would wait for a timeout). */
  #aggregatesUnreadable: string | undefined;

  constructor(source: AuditSource, trust: AuditTrust, coordinator: string, options: AuditOptions) {
    this.#source = source;
    this.#trust = trust;
    this.#options = options;
    this.#coordinator = coordinator;
    this.#history = new LogHistory(trust.genesis, source.stream, { registry: trust.registry });
  }

  #problem(sequence: number, code: AuditProblemCode, message: string): void {
    this.#problems.push({ sequence, code, message });
    this.#folding = false;
  }

  async entry(sequence: number, bytes: Uint8Array): Promise<void> {
    this.#entries++;
    const previous = this.#previous;
    this.#previous = { sequence, hash: sha256(bytes) };
    const gap = sequence !== previous.sequence + 1;
    if (gap) {
      const missing =
        sequence === previous.sequence + 2
          ? `entry ${previous.sequence + 1} is missing`
          : `entries ${previous.sequence + 1}–${sequence - 1} are missing`;
      this.#problem(
        sequence,
        'SEQUENCE_GAP',
        `entry ${sequence} follows entry ${previous.sequence}: ${missing}`,
      );
    }
    const view = this.#history.registry!;
    const opened = openStoredEntry(sequence, bytes, {
      federation: this.#source.federation,
      stream: this.#source.stream,
      coordinator: this.#coordinator,
      keys: (id) => view.current(id),
    });
    if (!opened.ok) {
      if (opened.code !== 'SIGNATURE_INVALID' && opened.code !== 'FRAME_MALFORMED') this.#counts.signatures++;
      this.#problem(sequence, opened.code, opened.message);
      return;
    }
    this.#counts.signatures++;
    const { entry } = opened;
    if (!gap) {
      this.#counts.links++;
      if (!bytesEqual(entry.record.previousEntry, previous.hash)) {
        this.#problem(
          sequence,
          'CHAIN_BROKEN',
          `entry ${sequence}'s previous_entry ${short(entry.record.previousEntry)} is not the SHA-256 of entry ${previous.sequence} (${short(previous.hash)})`,
        );
      }
    }
    if (!opened.audited) {
      this.#counts.uncheckedKinds++;
      this.#unchecked.push({
        sequence,
        code: 'UNCHECKED_KIND',
        message: `entry ${sequence} holds a record of a kind this build does not check (${entry.record.record ?? 'unknown field'}); its signature and link were checked`,
      });
      if (this.#folding) this.#historyThrough = sequence;
      return;
    }
    this.#keepEvidence(entry);
    const decision = entry.record.decision;
    if (decision?.commit === true) this.#checkCommitHash(sequence, decision);
    this.#fold(entry);
    if (decision) await this.#decided(sequence, decision);
  }

  /** Keeps a RoundOpen and the partial records of its attempt for the recomputation at its COMMIT. */
  #keepEvidence(entry: LogEntry): void {
    const open = entry.record.roundOpen;
    if (open) {
      this.#opens.set(open.round, open);
      this.#partials.set(open.round, []);
    }
    const p = entry.record.partial;
    const opened = p ? this.#opens.get(p.round) : undefined;
    if (p && opened !== undefined && bytesEqual(opened.attempt, p.attempt)) {
      this.#partials.get(p.round)?.push({ sequence: entry.sequence, record: p });
    }
    const batch =
      entry.record.votes ?? (entry.record.vote ? { ...entry.record.vote, votes: [entry.record.vote] } : null);
    const votedIn = batch ? this.#opens.get(batch.round) : undefined;
    if (batch && votedIn !== undefined && bytesEqual(votedIn.attempt, batch.attempt)) {
      const view = this.#history.registry!;
      const votes = this.#votes.get(batch.round) ?? new Map<string, ControlBodies['vote']>();
      for (const v of batch.votes) {
        try {
          votes.set(
            v.member,
            openControl(v.envelope, 'vote', (id) => view.current(id), { signer: v.member }).body,
          );
        } catch {
          // the history rules report a vote that does not open (VOTE_INVALID)
        }
      }
      this.#votes.set(batch.round, votes);
    }
  }

  #checkCommitHash(sequence: number, d: DecisionBody): void {
    let commit: Commit;
    try {
      commit = createCommit({
        parent: d.parent,
        height: d.height,
        round: d.round,
        aggregateDigest: d.kind === 'rollback' ? ZERO_HASH : d.aggregateDigest,
        modelHash: d.modelHash,
        params: d.params,
        kind: d.kind as CommitKind,
      });
    } catch (err) {
      // Fields no commit can have: the history's rules name the field (or this does, past them).
      if (!this.#folding) {
        this.#problem(
          sequence,
          'DECISION_INVALID',
          `COMMIT of round ${d.round} has unusable fields: ${(err as Error).message}`,
        );
      }
      return;
    }
    this.#counts.commitHashes++;
    if (!bytesEqual(commit.hash, d.commitHash)) {
      this.#problem(
        sequence,
        'COMMIT_HASH_MISMATCH',
        `COMMIT of round ${d.round} names hash ${short(d.commitHash)}, its fields hash to ${short(commit.hash)}`,
      );
    }
  }

  /** Folds a verified, linked entry into the history (rules 1–6) while no problem has been found. */
  #fold(entry: LogEntry): void {
    const kind = recordKind(entry.record);
    if (!this.#folding) {
      // Past the rules: a registry change still gets its officer signature checked.
      const change = entry.record.registryChange;
      const officer = this.#history.registry?.officerKey;
      if (change && officer !== undefined) {
        this.#counts.registryChanges++;
        try {
          openRegistryChange(change, officer);
        } catch (err) {
          this.#problem(
            entry.sequence,
            'REGISTRY_CHANGE_INVALID',
            `registry change refused: ${(err as Error).message}`,
          );
        }
      }
      return;
    }
    try {
      this.#history.apply(entry);
    } catch (err) {
      if (!(err instanceof FederationLogError)) throw err;
      // An evidence rule names its code and the record at fault (a vote, found at its decision).
      const rule = err.details['rule'];
      const at = err.details['at'];
      const code =
        typeof rule === 'string' && EVIDENCE_CODES.has(rule)
          ? (rule as AuditProblemCode)
          : (RULE_CODES[kind] ?? 'ENTRY_INVALID');
      this.#problem(typeof at === 'number' ? at : entry.sequence, code, err.message);
      return;
    }
    this.#counts.historyRules++;
    if (kind === 'partial') this.#counts.partials++;
    if (kind === 'vote') this.#counts.votes++;
    if (kind === 'votes') this.#counts.votes += entry.record.votes!.votes.length;
    if (kind === 'registryChange') this.#counts.registryChanges++;
    if (kind === 'snapshot') this.#counts.snapshots++;
    if (kind === 'adminAction') this.#counts.adminActions++;
    this.#historyThrough = entry.sequence;
  }

  async #decided(sequence: number, d: DecisionBody): Promise<void> {
    const info = d.aggregate;
    const named = d.commit && d.kind !== 'rollback' && info != null;
    let status: AuditRound['aggregate'] = 'none';
    if (!d.commit && (d.culprits?.length ?? 0) > 0) await this.#checkCulprits(sequence, d);
    if (d.commit && d.kind === 'round') {
      const problem = this.#privacy.check(sequence, d);
      if (problem !== null) this.#problems.push(problem);
      this.#counts.privacyRecords = this.#privacy.checked;
    }
    if (named && this.#options.skipAggregates === true) {
      status = 'unchecked';
      this.#unchecked.push({
        sequence,
        code: 'AGGREGATE_SKIPPED',
        message: `aggregate ${JSON.stringify(info.object)} of round ${d.round} not checked (skipped on request)`,
      });
    } else if (named && this.#aggregatesUnreadable !== undefined) {
      status = 'unchecked';
      this.#unchecked.push({
        sequence,
        code: 'AGGREGATE_UNREADABLE',
        message: `aggregate ${JSON.stringify(info.object)} of round ${d.round} not read: ${this.#aggregatesUnreadable}`,
      });
    } else if (named) {
      const check = await checkAggregate(this.#source, sequence, info, d.aggregateDigest);
      status = check.status;
      if (check.problem) this.#problems.push(check.problem);
      const open = this.#opens.get(d.round);
      if (check.bytes !== undefined && open !== undefined) {
        const view = this.#history.registry!;
        const recomputed = await recomputeAggregate({
          source: this.#source,
          sequence,
          open,
          info,
          aggregate: check.bytes,
          partials: this.#partials.get(d.round) ?? [],
          siteKey: (id) => (view.role(id) === 'site' ? view.current(id) : undefined),
          ckksParams: this.#options.ckksParams ?? [DEFAULT_CKKS_PARAMS],
          ...robustRecordOf(d.params),
          ...(this.#options.contributionRetentionMs === undefined
            ? {}
            : { retentionMs: this.#options.contributionRetentionMs }),
          ...(this.#options.skipContributions === true ? { skipContributions: true } : {}),
          ...(this.#options.now === undefined ? {} : { now: this.#options.now }),
        });
        if (recomputed.robust) this.#counts.robustAggregates++;
        this.#counts.contributions += recomputed.contributions;
        if (recomputed.problems.length === 0 && recomputed.unchecked.length === 0) this.#counts.recomputed++;
        if (recomputed.problems.length > 0) status = 'problem';
        this.#problems.push(...recomputed.problems);
        this.#unchecked.push(...recomputed.unchecked);
      }
      if (check.unchecked) {
        this.#unchecked.push(check.unchecked);
        if (this.#source.kind === 'live') {
          this.#aggregatesUnreadable = `the aggregate store could not be read at entry ${sequence}`;
        }
      }
      if (check.status !== 'unchecked') this.#counts.aggregates++;
    }
    this.#rounds.push({
      round: d.round,
      sequence,
      outcome: d.commit ? 'commit' : 'abort',
      kind: d.commit ? d.kind : null,
      commit: d.commit ? bytesToHex(d.commitHash) : null,
      height: d.height,
      aggregate: status,
    });
  }

  /** An ABORT's culprits, against the evidence (`checkCulprits`); skipped with the contributions. */
  async #checkCulprits(sequence: number, d: DecisionBody): Promise<void> {
    const open = this.#opens.get(d.round);
    if (open === undefined || this.#options.skipContributions === true) return;
    const view = this.#history.registry!;
    const checked = await checkCulprits({
      source: this.#source,
      sequence,
      decision: d,
      open,
      partials: this.#partials.get(d.round) ?? [],
      votes: this.#votes.get(d.round) ?? new Map(),
      keys: (id) => view.current(id),
      siteKey: (id) => (view.role(id) === 'site' ? view.current(id) : undefined),
      ckksParams: this.#options.ckksParams ?? [DEFAULT_CKKS_PARAMS],
      ...(this.#options.contributionRetentionMs === undefined
        ? {}
        : { retentionMs: this.#options.contributionRetentionMs }),
      ...(this.#options.now === undefined ? {} : { now: this.#options.now }),
    });
    this.#counts.culprits += checked.proven;
    this.#problems.push(...checked.problems);
    this.#unchecked.push(...checked.unchecked);
  }

  /**
   * A bundle's seal, checked with its signer's key as the log leaves the registry: the member it
   * verified for, or null (live; unsealed, or sealed by a member that is neither the coordinator
   * nor an auditor: `BUNDLE_UNSEALED`; not verified: `BUNDLE_SEAL_INVALID`).
   */
  #checkSeal(): string | null {
    if (this.#source.kind !== 'bundle') return null;
    const bundle = this.#source as Partial<BundleAuditSource>;
    const seal = bundle.seal ?? null;
    if (seal === null) {
      this.#unchecked.push({
        sequence: 0,
        code: 'BUNDLE_UNSEALED',
        message: `the bundle (format version ${bundle.version ?? 'unknown'}) carries no exporter's seal: its exporter, export time and extent are unsigned claims, and a bundle cut to a prefix of the log reads as the log at an earlier time`,
      });
      return null;
    }
    const key = this.#history.registry?.current(seal.signer);
    if (key === undefined) {
      this.#problem(
        0,
        'BUNDLE_SEAL_INVALID',
        `the bundle is sealed by ${JSON.stringify(seal.signer)}, who has no signing key in the registry as the log leaves it (unknown or revoked)`,
      );
      return null;
    }
    if (!bundleSealValid(seal, key)) {
      this.#problem(
        0,
        'BUNDLE_SEAL_INVALID',
        `the seal of ${JSON.stringify(seal.signer)} does not verify over the bundle's bytes: cut, extended or altered after it was sealed`,
      );
      return null;
    }
    // Any member can seal what it relabels as its own export: only those who read the whole log
    // and every contribution vouch for one.
    const role = this.#history.registry?.role(seal.signer);
    if (role !== 'coordinator' && role !== 'auditor') {
      this.#unchecked.push({
        sequence: 0,
        code: 'BUNDLE_UNSEALED',
        message: `the bundle is sealed by ${JSON.stringify(seal.signer)}, a ${role ?? 'member'}: only the coordinator's or an auditor's seal vouches for a bundle (any member could relabel another's bundle, cut it, and seal it as its own)`,
      });
      return null;
    }
    return seal.signer;
  }

  finish(last: number): AuditReport {
    const previous = this.#previous;
    if (last > previous.sequence) {
      const missing =
        last === previous.sequence + 1
          ? `entry ${last} is missing`
          : `entries ${previous.sequence + 1}–${last} are missing`;
      this.#problem(
        last,
        'LOG_TRUNCATED',
        `the log's last entry is ${last}, the last one read is ${previous.sequence}: ${missing}`,
      );
    }
    const sealedBy = this.#checkSeal();
    const head = this.#history.head;
    const problems = [...this.#problems].sort((a, b) => a.sequence - b.sequence);
    const unchecked = [...this.#unchecked];
    return {
      federation: this.#source.federation,
      source: {
        kind: this.#source.kind,
        stream: this.#source.stream,
        member: this.#source.member,
        exportedUnixMs: this.#source.exportedUnixMs,
        sealedBy,
      },
      registry: this.#trust.registry.sha256,
      genesis: bytesToHex(this.#trust.genesis.hash),
      head: { hash: bytesToHex(head.commit.hash), height: head.commit.height, sequence: head.sequence },
      entries: this.#entries,
      lastEntry:
        previous.sequence === 0 ? null : { sequence: previous.sequence, hash: bytesToHex(previous.hash) },
      historyThrough: this.#historyThrough,
      rounds: this.#rounds,
      checked: { ...this.#counts },
      problems,
      unchecked,
      verified: problems.length === 0 && !auditIncomplete({ unchecked }),
    };
  }
}

function short(hash: Uint8Array): string {
  return hash.length === 0 ? '(none)' : bytesToHex(hash).slice(0, 12);
}

/** The robust record of a COMMIT's params, as `recomputeAggregate` takes it (none when the params do not decode: the history rules report those). */
function robustRecordOf(params: Uint8Array): { robust?: RoundRobust } {
  try {
    const robust = decodeRoundParams(params).robust;
    return robust === undefined ? {} : { robust };
  } catch {
    return {};
  }
}
