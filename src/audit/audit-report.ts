/**
 * Stable codes of the problems an audit finds, each naming the log entry it is about; never renamed
 * once released. docs/log-format.md ("Auditing") says how each is checked.
 */
export const AUDIT_PROBLEM_CODES = [
  /** The stored bytes are not a framed control message: above the size cap, bad magic, version, kind or length, or no protobuf. */
  'FRAME_MALFORMED',
  /** Not signed by the coordinator's key in force at the entry's position (other signer, unknown key id, bad signature). */
  'SIGNATURE_INVALID',
  /** Signed, but not a log record of this federation: another federation, `previous_entry` not 32 bytes, not exactly one record. */
  'ENTRY_INVALID',
  /** The entry stored at sequence n claims another sequence (reordered or replayed). */
  'SEQUENCE_MISMATCH',
  /** Entries are missing before this one (removed): the message names both sequences. */
  'SEQUENCE_GAP',
  /** The log's last sequence is beyond the last entry read: entries are missing at its end. */
  'LOG_TRUNCATED',
  /** `previous_entry` is not the SHA-256 of the previous entry's stored bytes. */
  'CHAIN_BROKEN',
  /** A RoundOpen breaks the history rules (round order, a round open while another is undecided, its base is not the head). */
  'ROUND_OPEN_INVALID',
  /** A Decision breaks the history rules (round not open, parent not the head, height, kind, rollback target, evaluation). */
  'DECISION_INVALID',
  /** A COMMIT names a commit hash its own fields do not hash to. */
  'COMMIT_HASH_MISMATCH',
  /** A SnapshotRecord names a commit that is not on the chain at the height it claims. */
  'SNAPSHOT_INVALID',
  /** A RegistryChange whose officer signature does not verify or that the registry's rules refuse. */
  'REGISTRY_CHANGE_INVALID',
  /** An AdminAction that names no action or no caller. */
  'ADMIN_ACTION_INVALID',
  /** The aggregate store holds no object of the name a COMMIT gives. */
  'AGGREGATE_MISSING',
  /** The stored aggregate does not hash to the COMMIT's `aggregate_digest`. */
  'AGGREGATE_DIGEST_MISMATCH',
  /** The stored aggregate's size is not `aggregate.object_bytes`, or it is not `u32(count) ‖ (u32(length) ‖ ciphertext)*` with the block count its encoding needs. */
  'AGGREGATE_SIZE_MISMATCH',
  /** The object store's own record of the aggregate is inconsistent (chunks, size or digest of its meta). */
  'AGGREGATE_CORRUPT',
  /** A PartialRecord breaks the evidence rules: not of the open round and attempt, listing a site not assigned to it or below it in the round's aggregation tree, a second partial of it, or its signature. */
  'PARTIAL_INVALID',
  /**
   * A ThresholdEpochRecord (a re-shared key epoch) breaks the rules: logged while a round is open
   * or from another round than the next, a generation not above the last, a malformed roster, or a
   * roster site's ready missing, not its signature, or for another epoch id.
   */
  'THRESHOLD_EPOCH_INVALID',
  /** A VoteRecord or VoteBatch breaks the evidence rules: not of the open round and attempt, a second vote of a member, its member's signature, or an empty batch. */
  'VOTE_INVALID',
  /** A logged YES vote names another H(w′) (or commit) than the COMMIT that counts it; reported at the vote. */
  'VOTE_MODEL_MISMATCH',
  /** A contribution a partial lists is left out: of the decision's contributors, or of the stored aggregate (re-added). */
  'CONTRIBUTION_MISSING',
  /** A contribution counted twice: a site in two partials or twice in the decision, or twice in the stored aggregate (re-added). */
  'CONTRIBUTION_DUPLICATE',
  /** A contribution that is not what its site signed: a site manifest of another site, digest or weight, a bad site signature, or a stored update that does not verify against it (altered, truncated, frames missing). */
  'CONTRIBUTION_MISMATCH',
  /**
   * A contribution a partial lists is not in the contributions stream (nor, in a bundle, an item of
   * it) although its round is younger than the retention: never stored, removed, or left out of the
   * bundle. Reported at the partial, naming the round, the site and the aggregator that stored it.
   */
  'CONTRIBUTION_NOT_STORED',
  /** A frame of a stored contribution was written more than once (a stream weaker than write-once); at the partial. */
  'CONTRIBUTION_OVERWRITTEN',
  /** The stored aggregate is not the block-wise sum of the stored contributions its partials list (and no single missing or doubled one explains it). */
  'AGGREGATE_RECOMPUTE_MISMATCH',
  /** A round commit's privacy record (docs/privacy.md) names another contributor count, changes the mechanism or δ, records no more RDP than the round before, or an ε its own RDP does not give. */
  'PRIVACY_RECORD_INVALID',
  /** A `plain`-mode round commit's robust record names an aggregate update Δ̄ (or kept sites) other than its rule gives on the stored contributions. */
  'ROBUST_AGGREGATE_MISMATCH',
  /**
   * An ABORT names a culprit its evidence does not bear out: a partial kept as evidence that is not
   * its aggregator's signed partial or is the exact sum of what it lists, a drop no logged receipt
   * proves, a contribution said not stored that is (docs/security.md, "Blame").
   */
  'CULPRIT_UNPROVEN',
  /**
   * A bundle's seal does not verify: not its exporter's signature over the bundle's bytes (cut,
   * extended or altered, then resealed by someone else), or its signer has no key in the registry
   * as the log leaves it (unknown or revoked). Reported at sequence 0 (the bundle as a whole).
   */
  'BUNDLE_SEAL_INVALID',
] as const;

export type AuditProblemCode = (typeof AUDIT_PROBLEM_CODES)[number];

/** Stable codes of the checks an audit could not make (listed in {@link AuditReport.unchecked}). */
export const AUDIT_UNCHECKED_CODES = [
  /**
   * A record of a kind this build does not check (a newer record kind): its frame, signature,
   * sequence and link were checked, its content was not.
   */
  'UNCHECKED_KIND',
  /**
   * The aggregate could not be read: credentials without read access to the aggregate store, a
   * timeout, or a bundle exported without aggregates. The audit is incomplete.
   */
  'AGGREGATE_UNREADABLE',
  /** The aggregate was not checked because the audit was asked to skip aggregates. */
  'AGGREGATE_SKIPPED',
  /**
   * The aggregate was not re-added: a contribution could not be read (credentials without read
   * access to the contributions stream, a bundle exported without contributions, a timeout), or
   * the CKKS parameters are unknown to the auditor. The audit is incomplete: what the log implies
   * was not all checked.
   */
  'CONTRIBUTIONS_UNAVAILABLE',
  /**
   * The aggregate was not re-added: a contribution is gone and its round ended more than the
   * retention the auditor was given (`history.updateRetentionMs`) before the evidence was read.
   * Listed; does not make the audit incomplete.
   */
  'CONTRIBUTIONS_EXPIRED',
  /** The aggregate was not re-added because the audit was asked to skip contributions. */
  'CONTRIBUTIONS_SKIPPED',
  /** A COMMIT of a log written before partial records were logged: nothing to re-add from. */
  'CONTRIBUTIONS_UNLOGGED',
  /**
   * A culprit named by elimination over rounds (`ISOLATED`: the one site in every aggregate a
   * contribution spoiled), which one round's evidence cannot prove. Listed; does not make the
   * audit incomplete.
   */
  'CULPRIT_BY_ELIMINATION',
  /**
   * A bundle of a format before sealing (version 1 or 3), or sealed by a member that is neither the
   * coordinator nor an auditor: who exported it, when, and how far its log goes are nobody's
   * trusted statement, so a cut or resealed bundle cannot be told from the log at an earlier time.
   * The audit is incomplete. At sequence 0.
   */
  'BUNDLE_UNSEALED',
] as const;

export type AuditUncheckedCode = (typeof AUDIT_UNCHECKED_CODES)[number];

/** One finding: what is wrong, at which log entry. */
export interface AuditProblem {
  /** Log sequence of the entry the problem is about (≥ 1). */
  readonly sequence: number;
  readonly code: AuditProblemCode;
  readonly message: string;
}

/** One check the audit could not make, at which log entry. */
export interface AuditUnchecked {
  readonly sequence: number;
  readonly code: AuditUncheckedCode;
  readonly message: string;
}

/** What the aggregate check of a COMMIT concluded. */
export type AuditAggregateStatus = 'verified' | 'problem' | 'unchecked' | 'none';

/** One decided round as the audit saw it (from entries whose signature verified). */
export interface AuditRound {
  readonly round: number;
  /** Log sequence of the decision. */
  readonly sequence: number;
  readonly outcome: 'commit' | 'abort';
  /** COMMIT: `round`, `rollback` or `statistics`; null for an ABORT. */
  readonly kind: string | null;
  /** COMMIT: the commit hash (lowercase hex); null for an ABORT. */
  readonly commit: string | null;
  /** Head height after the decision. */
  readonly height: number;
  /** `none`: the decision names no aggregate (ABORT, rollback). */
  readonly aggregate: AuditAggregateStatus;
}

/** How many of each check the audit made (and passed or failed: see the problems). */
export interface AuditCheckCounts {
  /** Entries whose frame was decoded and whose signature was checked. */
  readonly signatures: number;
  /** Entries whose `previous_entry` was compared with the previous entry's hash. */
  readonly links: number;
  /** Entries folded into the history under rules 1–6. */
  readonly historyRules: number;
  /** COMMITs whose hash was recomputed. */
  readonly commitHashes: number;
  /** Aggregates read and checked (digest, size, block count). */
  readonly aggregates: number;
  /** Registry changes whose officer signature and rules were checked. */
  readonly registryChanges: number;
  /** Snapshot records checked against the chain. */
  readonly snapshots: number;
  /** Admin actions checked (an action and a caller named). */
  readonly adminActions: number;
  /** Partial records checked (round, attempt, aggregator, site manifests and signatures). */
  readonly partials: number;
  /** Votes checked, each vote of a VoteBatch counted (round, attempt, member signature; a COMMIT's H(w′)). */
  readonly votes: number;
  /** Stored contributions loaded, verified and re-added into a recomputed aggregate. */
  readonly contributions: number;
  /** Aggregates recomputed byte-identical from their contributions. */
  readonly recomputed: number;
  /** Round commits whose privacy record was checked (differential privacy only). */
  readonly privacyRecords: number;
  /** `plain`-mode round commits whose robust aggregate update was recomputed from their contributions. */
  readonly robustAggregates: number;
  /** Culprits an ABORT names whose fault its evidence proves (`checkCulprits`). */
  readonly culprits: number;
  /** Records of a kind this build does not check. */
  readonly uncheckedKinds: number;
}

/**
 * The result of an audit: where the log stands, what was checked, every problem found (each at its
 * entry's sequence) and every check that could not be made. Plain JSON values (hashes are lowercase
 * hex), so the CLI prints it with `--json` as is and the admin API serves it. `verified` holds when
 * there is no problem and the audit is complete ({@link auditIncomplete}).
 */
export interface AuditReport {
  readonly federation: string;
  /** Where the entries came from. */
  readonly source: {
    readonly kind: 'live' | 'bundle';
    /** The log stream's name (`COHORT_<F>`). */
    readonly stream: string;
    /** The member whose credentials read the log (live, or the bundle's exporter). */
    readonly member: string | null;
    /** Bundle: when it was exported (the exporter's clock); null live. */
    readonly exportedUnixMs: number | null;
    /**
     * Bundle: the member whose seal verified (so `member`, `exportedUnixMs` and the log's extent
     * are its signed statement); null live, unsealed, or when the seal did not verify.
     */
    readonly sealedBy: string | null;
  };
  /** SHA-256 (hex) of the member registry file whose keys were trusted. */
  readonly registry: string;
  /** Hash (hex) of the genesis commit the history starts from. */
  readonly genesis: string;
  /** The chain's head as the verified history ends: commit hash, height, and the sequence of its decision (0: genesis). */
  readonly head: { readonly hash: string; readonly height: number; readonly sequence: number };
  /** Entries read. */
  readonly entries: number;
  /** The last entry read: its sequence and the SHA-256 of its stored bytes; null for an empty log. */
  readonly lastEntry: { readonly sequence: number; readonly hash: string } | null;
  /** The last entry the history rules were applied through (they stop at the first problem). */
  readonly historyThrough: number;
  readonly rounds: readonly AuditRound[];
  readonly checked: AuditCheckCounts;
  readonly problems: readonly AuditProblem[];
  readonly unchecked: readonly AuditUnchecked[];
  /** No problem, and the audit is complete ({@link auditIncomplete} is false). */
  readonly verified: boolean;
}

/** The unchecked codes that make an audit incomplete (see {@link auditIncomplete}). */
export const INCOMPLETE_CODES: ReadonlySet<AuditUncheckedCode> = new Set([
  'AGGREGATE_UNREADABLE',
  'CONTRIBUTIONS_UNAVAILABLE',
  'BUNDLE_UNSEALED',
]);

/**
 * Whether checks were left undone that the auditor did not choose to skip: an aggregate that could
 * not be read, contributions that could not be read (so an aggregate was not re-added), or a bundle
 * no exporter sealed (its extent is unauthenticated). Records
 * of kinds this build does not know, aggregates or contributions skipped on request, and
 * contributions past their retention do not make an audit incomplete (they are counted and listed).
 */
export function auditIncomplete(report: Pick<AuditReport, 'unchecked'>): boolean {
  return report.unchecked.some((u) => INCOMPLETE_CODES.has(u.code));
}
