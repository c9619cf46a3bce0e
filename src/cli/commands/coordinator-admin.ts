import type { AdminMetrics, AdminStream, AuditBundleRequest, VerifyLogOptions } from '../../admin/index.ts';
import {
  type AuditJobTarget,
  type AuditReport,
  runAuditVerifyJob,
  startAuditBundleJob,
} from '../../audit/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import {
  addProcessMetrics,
  adminApiMetrics,
  type CryptoTimings,
  createCoordinatorMetrics,
} from '../../metrics/index.ts';
import type { CoordinatorEvent, CoordinatorHandle } from '../../services/coordinator/index.ts';
import { ckksParamsOf, type MemberContext } from '../../services/index.ts';
import { statsOnceStarted } from '../context/metrics-options.ts';
import { packageVersion } from '../context/package-version.ts';
import { trustSources } from './audit-session.ts';

/** What the coordinator command hands the admin API besides the coordinator itself. */
export interface CoordinatorAdminServices {
  /** Feeds the metrics; pass every coordinator event. */
  readonly onEvent: (event: CoordinatorEvent) => void;
  /** The exposition, and the admin API's own counters (refusals, audit jobs) in it. */
  readonly metrics: AdminMetrics;
  /** Feeds the metrics' signature and CKKS histograms; pass as the coordinator's `cryptoTimings`. */
  readonly timings: CryptoTimings;
  /** The audit bundle (`GET /v1/audit/bundle`), exported by a child process and streamed. */
  readonly exportAuditBundle: (request: AuditBundleRequest) => Promise<AdminStream>;
  /** An audit of the live log (`GET /v1/audit/verify`, the dashboard's), run by a child process. */
  readonly verifyLog: (options: VerifyLogOptions) => Promise<AuditReport>;
  /** Connects the metrics to the running coordinator's `stats()` (events may arrive before). */
  attach(handle: CoordinatorHandle): void;
}

/** Options of {@link coordinatorAdminServices}. */
export interface CoordinatorAdminServicesOptions {
  /** V8 heap of each audit process, MiB (default `DEFAULT_AUDIT_HEAP_MB` of src/audit). */
  readonly auditHeapMb?: number;
}

/**
 * The coordinator's Prometheus metrics (docs/metrics.md, the admin API's counters included), its
 * audit bundle export and its audit of the live log (docs/log-format.md, "Auditing"). Audit work
 * never runs in the coordinator's process, which holds the lease and must keep deciding rounds:
 * each bundle or audit is a child process of its own (src/audit `startAuditBundleJob`,
 * `runAuditVerifyJob`: niced, heap-bounded, killed when the API stops the job) that reads with the
 * coordinator's NATS credentials on a connection of its own named `<member>/audit`, trusting the
 * configuration's pinned registry and genesis: the same bundle `cohort audit export` writes,
 * streamed as it is produced, and the same report `cohort audit verify` makes (contributions past
 * `history.updateRetentionMs` listed as expired).
 */
export function coordinatorAdminServices(
  config: CohortConfig,
  mctx: MemberContext,
  options: CoordinatorAdminServicesOptions = {},
): CoordinatorAdminServices {
  let handle: CoordinatorHandle | undefined;
  const metrics = createCoordinatorMetrics({
    // Events flow from the coordinator's start, before `attach`: no scrape happens until the API listens.
    stats: statsOnceStarted('the coordinator', () => handle),
    transportStats: () => mctx.transport.stats(),
    aggregators: mctx.members.aggregators.map((a) => a.id),
  });
  addProcessMetrics(metrics.registry, packageVersion());
  const events = adminApiMetrics(metrics.registry);
  const federation = config.federation.id;
  const target = (): AuditJobTarget => ({
    config,
    member: mctx.member,
    connectionName: `${mctx.member}/audit`,
    trust: trustSources({}, config, federation),
  });
  const jobOptions = (signal: AbortSignal | undefined) => ({
    ...(signal === undefined ? {} : { signal }),
    ...(options.auditHeapMb === undefined ? {} : { maxHeapMb: options.auditHeapMb }),
  });
  return {
    onEvent: (e) => metrics.onEvent(e),
    metrics: { contentType: metrics.contentType, text: () => metrics.text(), events },
    timings: metrics.timings,
    attach: (h) => {
      handle = h;
    },
    exportAuditBundle: async ({ contributions, signal }) => {
      const job = await startAuditBundleJob(
        target(),
        { skipAggregates: false, skipContributions: !contributions },
        jobOptions(signal),
      );
      return {
        contentType: 'application/octet-stream',
        fileName: `${federation}-audit.bundle`,
        body: job.body,
      };
    },
    verifyLog: ({ skipAggregates, signal }) =>
      runAuditVerifyJob(
        target(),
        {
          skipAggregates,
          ckksParams: [ckksParamsOf(config)],
          contributionRetentionMs: config.history.updateRetentionMs,
        },
        jobOptions(signal),
      ),
  };
}
