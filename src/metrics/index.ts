export { AUDIT_JOB_KINDS, AUDIT_JOB_OUTCOMES, adminApiMetrics } from './admin-api-metrics.ts';
export {
  type CoordinatorMetrics,
  type CoordinatorMetricsOptions,
  createCoordinatorMetrics,
  ROUND_DURATION_BUCKETS,
  SYNC_LATENCY_BUCKETS,
} from './coordinator-metrics.ts';
export {
  CKKS_OPERATIONS,
  type CkksOperation,
  type CryptoTimings,
  createCryptoTimings,
  SIGNATURE_KINDS,
  type SignatureKind,
} from './crypto-timings.ts';
export {
  createAggregatorMetrics,
  createSiteMetrics,
  type MemberMetrics,
  type MemberMetricsOptions,
} from './member-metrics.ts';
export { type MetricsProvider, registryProvider } from './metrics-provider.ts';
export { type MetricsListen, type MetricsServer, serveMetrics } from './metrics-server.ts';
export { addProcessMetrics } from './process-metrics.ts';
export {
  COORDINATOR_REFUSAL_CODES,
  OTHER_REASON,
  REJECT_REASON_LABELS,
  rejectReasonLabel,
} from './reject-reasons.ts';
export { type PhaseObservation, ROUND_PHASES, type RoundPhase, RoundPhaseClock } from './round-phases.ts';
export type { TransportStatsReader } from './transport-metrics.ts';
export { VersionDriftTracker } from './version-drift.ts';
