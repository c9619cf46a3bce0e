import type { Readable } from 'node:stream';
import type { AuditReport } from '../audit/index.ts';
import type { FederationTimeline } from '../history/index.ts';
import type { AdminActionBody } from '../protocol/index.ts';
import type {
  CoordinatorStats,
  MemberStatus,
  QueuedRegistryChange,
  RunInfo,
  RunSettings,
} from '../services/coordinator/index.ts';
import type { ChainCommit } from '../services/federation-log/index.ts';
import type { AdminRefusalReason } from './admin-refusals.ts';

/**
 * What the admin API reads from and asks of the running coordinator: a narrow view of
 * `CoordinatorHandle` (the API never reaches past it into the service).
 */
export interface AdminCoordinator {
  stats(): CoordinatorStats;
  members(): readonly MemberStatus[];
  runs(): readonly RunInfo[];
  startRun(settings: RunSettings, by: string): RunInfo;
  stopRun(id: string, by: string): RunInfo;
  /** Decides the open round `round` ABORT (`ROUND_NOT_OPEN` when it is not the open one). */
  abortRound(round: number, reason: string): void;
  /**
   * Queues a rollback to `target` (a commit hash below the head); resolves once the coordinator
   * accepted it (the round itself follows), rejects at once with `ROLLBACK_REFUSED` otherwise.
   */
  queueRollback(target: Uint8Array, reason: string): Promise<void>;
  /** An officer-signed `RegistryChange` (bytes), checked and queued by the coordinator. */
  submitRegistryChange(request: Uint8Array): QueuedRegistryChange;
  /** Appends a signed admin-action record to the log; resolves with its sequence. */
  appendAdminAction(action: AdminActionBody): Promise<number>;
}

/** The federation's verified history, as `cohort versions` reads it. */
export interface AdminHistory {
  /** The timeline, brought up to the log's last entry first (reads are serialized). */
  timeline(): Promise<FederationTimeline>;
  /** Log time of entry `sequence` (ms since the epoch); a RoundOpen's time for round timings. */
  entryTime(sequence: number): Promise<number>;
}

/** A downloadable file the API serves as is. */
export interface AdminDownload {
  readonly contentType: string;
  /** File name for `Content-Disposition`. */
  readonly fileName: string;
  readonly bytes: Uint8Array;
}

/** A download the API streams as it is produced (an audit bundle). */
export interface AdminStream {
  readonly contentType: string;
  /** File name for `Content-Disposition`. */
  readonly fileName: string;
  /**
   * The bytes, produced as they are read. It must end only once the whole file was produced, and
   * error (not end) when production failed: the API then cuts the answer off.
   */
  readonly body: Readable;
}

/** What `GET /v1/audit/bundle` asks of {@link AdminDeps.exportAuditBundle}. */
export interface AuditBundleRequest {
  /**
   * Include the stored contributions (false: the bundle's meta says they were skipped). The API
   * decides it from the caller's scope and the federation's mode (docs/admin-api.md).
   */
  readonly contributions: boolean;
  /** Aborted when the client leaves or a bound is reached: stop producing at once. */
  readonly signal: AbortSignal;
}

/** Options of {@link AdminDeps.verifyLog}. */
export interface VerifyLogOptions {
  /** Do not read the aggregates (each is listed as skipped): signatures, chain and history only. */
  readonly skipAggregates: boolean;
  /** Aborted when no caller waits for the audit any more or its time bound is reached. */
  readonly signal?: AbortSignal;
}

/** How an audit job of the API ended (`cohort_admin_audit_jobs_total{outcome}`). */
export type AuditJobOutcome = 'completed' | 'failed' | 'cancelled' | 'too_large' | 'timeout';

/** What the API reports to the metrics as it goes; each method optional, none may throw. */
export interface AdminApiEvents {
  /** A request was refused (every error answer, by reason). */
  refused?(reason: AdminRefusalReason): void;
  /** An audit job (`bundle` or `verify`) started. */
  auditJobStarted?(kind: 'bundle' | 'verify'): void;
  /** An audit job ended. */
  auditJobEnded?(kind: 'bundle' | 'verify', outcome: AuditJobOutcome): void;
}

/** The Prometheus exposition, built by `src/metrics`, and where the API's own counts go. */
export interface AdminMetrics {
  readonly contentType: string;
  text(): Promise<string>;
  /** The API's refusals and audit jobs, counted by the metrics (src/metrics `adminApiMetrics`). */
  readonly events?: AdminApiEvents;
}

/**
 * Everything `buildAdminApi` serves from. Optional slots answer `NOT_CONFIGURED` (501) while
 * empty: the routes and the OpenAPI document do not depend on what is wired.
 */
export interface AdminDeps {
  /** The federation id (shown in the status). */
  readonly federation: string;
  /**
   * How the federation aggregates (shown in the status): `federation.mode`, and the robust rule of
   * `federation.aggregation` (null: FedAvg of the sum). Absent: the status shows null.
   */
  readonly aggregation?: { readonly mode: 'he' | 'plain'; readonly rule: string | null };
  readonly coordinator: AdminCoordinator;
  readonly history: AdminHistory;
  /** The model of a chain commit as safetensors (needs a site's model store on this host). */
  readonly exportModel?: (commit: ChainCommit, timeline: FederationTimeline) => Promise<AdminDownload>;
  /**
   * The audit bundle (src/audit), streamed: resolves once it is under way (its first bytes are
   * there), rejects with why it could not start. Run it outside the coordinator's event loop (the
   * coordinator command runs it in a child process).
   */
  readonly exportAuditBundle?: (request: AuditBundleRequest) => Promise<AdminStream>;
  /**
   * An audit of the live log (`verifyAudit` of src/audit, trusting the configuration's pinned
   * registry and genesis): `GET /v1/audit/verify`. The coordinator command runs it in a child
   * process.
   */
  readonly verifyLog?: (options: VerifyLogOptions) => Promise<AuditReport>;
  /** `GET /metrics`. */
  readonly metrics?: AdminMetrics;
  /** Clock, ms since the epoch (default `Date.now`): stamps admin actions. */
  readonly now?: () => number;
}
