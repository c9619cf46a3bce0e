import { Counter, Gauge, type Registry } from 'prom-client';
import type { AdminApiEvents, AuditJobOutcome } from '../admin/admin-deps.ts';
import { ADMIN_REFUSAL_REASONS } from '../admin/admin-refusals.ts';
import { InvalidArgumentError } from '../errors/index.ts';

/** Kinds of audit job the admin API runs (`kind` of the audit job metrics). */
export const AUDIT_JOB_KINDS = ['bundle', 'verify'] as const;

/** How an audit job ends (`outcome` of `cohort_admin_audit_jobs_total`). */
export const AUDIT_JOB_OUTCOMES: readonly AuditJobOutcome[] = Object.freeze([
  'completed',
  'failed',
  'cancelled',
  'too_large',
  'timeout',
]);

/**
 * The admin API's counters (docs/metrics.md) in `registry`, and the events that feed them (pass
 * them as the API's `AdminMetrics.events`): every refused request by reason
 * (`cohort_admin_requests_refused_total`), audit jobs by kind and outcome
 * (`cohort_admin_audit_jobs_total`) and those running (`cohort_admin_audit_jobs_running`). Every
 * series exists at 0 from the start. No event throws.
 */
export function adminApiMetrics(registry: Registry): Required<AdminApiEvents> {
  if (typeof registry?.registerMetric !== 'function') {
    throw new InvalidArgumentError('registry must be a prom-client Registry', {
      details: { name: 'registry' },
    });
  }
  const refused = new Counter<'reason'>({
    name: 'cohort_admin_requests_refused_total',
    help: 'Admin API requests refused, by reason (401, 403, 429 by token or by address, audit jobs busy or at capacity, 400, 404, other errors).',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of ADMIN_REFUSAL_REASONS) refused.inc({ reason }, 0);
  const jobs = new Counter<'kind' | 'outcome'>({
    name: 'cohort_admin_audit_jobs_total',
    help: 'Audit jobs of the admin API (bundle exports, audits of the live log) that ended, by kind and outcome.',
    labelNames: ['kind', 'outcome'],
    registers: [registry],
  });
  const running = new Gauge<'kind'>({
    name: 'cohort_admin_audit_jobs_running',
    help: 'Audit jobs of the admin API running now, by kind (each in a process of its own).',
    labelNames: ['kind'],
    registers: [registry],
  });
  for (const kind of AUDIT_JOB_KINDS) {
    running.set({ kind }, 0);
    for (const outcome of AUDIT_JOB_OUTCOMES) jobs.inc({ kind, outcome }, 0);
  }
  return {
    refused: (reason) => {
      if ((ADMIN_REFUSAL_REASONS as readonly string[]).includes(reason)) refused.inc({ reason });
    },
    auditJobStarted: (kind) => {
      if ((AUDIT_JOB_KINDS as readonly string[]).includes(kind)) running.inc({ kind });
    },
    auditJobEnded: (kind, outcome) => {
      if (!(AUDIT_JOB_KINDS as readonly string[]).includes(kind)) return;
      running.dec({ kind });
      if (AUDIT_JOB_OUTCOMES.includes(outcome)) jobs.inc({ kind, outcome });
    },
  };
}
