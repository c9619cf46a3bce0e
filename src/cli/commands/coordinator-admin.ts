import type { AdminDownload, AdminMetrics, VerifyLogOptions } from '../../admin/index.ts';
import {
  type AuditReport,
  exportAuditBundle,
  openLiveAuditSource,
  resolveAuditTrust,
  verifyAudit,
} from '../../audit/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { type CryptoTimings, createCoordinatorMetrics } from '../../metrics/index.ts';
import type { CoordinatorEvent, CoordinatorHandle } from '../../services/coordinator/index.ts';
import { ckksParamsOf, type MemberContext } from '../../services/index.ts';
import { trustSources } from './audit-session.ts';

/** What the coordinator command hands the admin API besides the coordinator itself. */
export interface CoordinatorAdminServices {
  /** Feeds the metrics; pass every coordinator event. */
  readonly onEvent: (event: CoordinatorEvent) => void;
  readonly metrics: AdminMetrics;
  /** Feeds the metrics' signature and CKKS histograms; pass as the coordinator's `cryptoTimings`. */
  readonly timings: CryptoTimings;
  readonly exportAuditBundle: () => Promise<AdminDownload>;
  /** An audit of the live log (`GET /v1/audit/verify`, the dashboard's verification status). */
  readonly verifyLog: (options: VerifyLogOptions) => Promise<AuditReport>;
  /** Connects the metrics to the running coordinator's `stats()` (events may arrive before). */
  attach(handle: CoordinatorHandle): void;
}

/**
 * The coordinator's Prometheus metrics (docs/metrics.md), its audit bundle export and its audit of
 * the live log (docs/log-format.md, "Auditing"), read through the coordinator's own NATS
 * connection: the same bundle `cohort audit export` writes and the same report `cohort audit
 * verify` makes, trusting the configuration's pinned registry and genesis.
 */
export function coordinatorAdminServices(
  config: CohortConfig,
  mctx: MemberContext,
): CoordinatorAdminServices {
  let handle: CoordinatorHandle | undefined;
  const metrics = createCoordinatorMetrics({
    // Events flow from the coordinator's start, before `attach`: no scrape happens until the API listens.
    stats: () => {
      if (handle === undefined) throw new Error('the coordinator has not started');
      return handle.stats();
    },
    transportStats: () => mctx.transport.stats(),
    aggregators: mctx.members.aggregators.map((a) => a.id),
  });
  const federation = config.federation.id;
  const liveSource = () =>
    openLiveAuditSource(mctx.transport.connection, {
      federation,
      member: mctx.member,
      timeoutMs: config.nats.timeoutMs,
    });
  return {
    onEvent: (e) => metrics.onEvent(e),
    metrics: { contentType: metrics.contentType, text: () => metrics.text() },
    timings: metrics.timings,
    attach: (h) => {
      handle = h;
    },
    exportAuditBundle: async () => {
      const trust = resolveAuditTrust(trustSources({}, config, federation));
      const source = await liveSource();
      const chunks: Uint8Array[] = [];
      await exportAuditBundle(
        source,
        { registry: trust.registry, genesis: trust.genesis, skipAggregates: false },
        (c) => {
          chunks.push(c.slice());
        },
      );
      return {
        contentType: 'application/octet-stream',
        fileName: `${federation}-audit.bundle`,
        bytes: Buffer.concat(chunks),
      };
    },
    verifyLog: async ({ skipAggregates }) => {
      const trust = resolveAuditTrust(trustSources({}, config, federation));
      return verifyAudit(await liveSource(), trust, { skipAggregates, ckksParams: [ckksParamsOf(config)] });
    },
  };
}
