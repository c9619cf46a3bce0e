export { type AggregateCheck, checkAggregate, expectedAggregateBlocks } from './aggregate-check.ts';
export {
  AUDIT_BUNDLE_MAGIC,
  AUDIT_BUNDLE_VERSION,
  type AuditBundle,
  type AuditBundleMeta,
  AuditBundleWriter,
  BUNDLE_ITEM,
  BUNDLE_SEAL_DOMAIN,
  type BundleSeal,
  type BundleSigner,
  type BundleSink,
  bundleSealValid,
  type ContributionNote,
  decodeAuditBundle,
  encodeAuditBundle,
  sealOf,
  writeAuditBundle,
} from './audit-bundle.ts';
export { AUDIT_ERROR_CODES, AuditError, type AuditErrorCode } from './audit-error.ts';
export {
  AUDIT_NICENESS,
  type AuditBundleJob,
  type AuditJobOptions,
  DEFAULT_AUDIT_HEAP_MB,
  runAuditVerifyJob,
  startAuditBundleJob,
} from './audit-job.ts';
export { AUDIT_JOB_ERROR_CODES, AuditJobError, type AuditJobErrorCode } from './audit-job-error.ts';
export type {
  AuditBundleJobOptions,
  AuditJobTarget,
  AuditVerifyJobOptions,
} from './audit-job-protocol.ts';
export {
  AUDIT_PROBLEM_CODES,
  AUDIT_UNCHECKED_CODES,
  type AuditAggregateStatus,
  type AuditCheckCounts,
  type AuditProblem,
  type AuditProblemCode,
  type AuditReport,
  type AuditRound,
  type AuditUnchecked,
  type AuditUncheckedCode,
  auditIncomplete,
  INCOMPLETE_CODES,
} from './audit-report.ts';
export type { AggregateRead, AuditSource, ContributionRead, StoredEntry } from './audit-source.ts';
export { type AuditTrustSources, resolveAuditTrust } from './audit-trust.ts';
export { loadBundleSigner } from './bundle-signer.ts';
export { type BundleAuditSource, bundleAuditSource } from './bundle-source.ts';
export {
  type ExportAuditBundleOptions,
  type ExportedBundleSummary,
  exportAuditBundle,
} from './export-bundle.ts';
export { type LiveAuditSourceOptions, openLiveAuditSource } from './live-source.ts';
export {
  AUDITED_RECORD_KINDS,
  type OpenEntryOptions,
  type OpenedEntry,
  openStoredEntry,
} from './open-entry.ts';
export { type AuditOptions, type AuditTrust, verifyAudit } from './verify-audit.ts';
