import type { CkksParams } from '../../crypto/ckks/index.ts';
import type { CohortConfig } from '../config/index.ts';
import type { AuditReport } from './audit-report.ts';
import type { AuditTrustSources } from './audit-trust.ts';
import type { ExportedBundleSummary } from './export-bundle.ts';

/** Where an audit job reads and what it trusts (structured-cloned to the child process). */
export interface AuditJobTarget {
  /** The federation's configuration: NATS servers, the member's key and TLS files. */
  readonly config: CohortConfig;
  /** The member whose read-only use of NATS the job makes (the coordinator, for the admin API). */
  readonly member: string;
  /** The job's connection name on the server (default `<member>/audit`), so operators can tell it apart. */
  readonly connectionName?: string;
  /** What the audit trusts: the registry file and pin, the genesis commit. */
  readonly trust: AuditTrustSources;
}

/** What a bundle job exports (as `exportAuditBundle`'s options). */
export interface AuditBundleJobOptions {
  readonly skipAggregates?: boolean;
  readonly skipContributions?: boolean;
}

/** What a verify job checks (as `verifyAudit`'s options). */
export interface AuditVerifyJobOptions {
  readonly skipAggregates?: boolean;
  readonly skipContributions?: boolean;
  readonly contributionRetentionMs?: number;
  readonly ckksParams?: readonly CkksParams[];
}

/** Parent → child: the one job the child runs, then it exits. */
export type AuditJobRequest =
  | { readonly kind: 'bundle'; readonly target: AuditJobTarget; readonly options: AuditBundleJobOptions }
  | { readonly kind: 'verify'; readonly target: AuditJobTarget; readonly options: AuditVerifyJobOptions };

/** Child → parent: the job's result, or why it failed (a `CohortError`'s code and message). */
export type AuditJobMessage =
  | { readonly type: 'bundle'; readonly summary: ExportedBundleSummary }
  | { readonly type: 'verify'; readonly report: AuditReport }
  | { readonly type: 'error'; readonly code: string; readonly message: string };

/** The child's file descriptor carrying a bundle's bytes (stdin, stdout, stderr, then this). */
export const AUDIT_DATA_FD = 3;
