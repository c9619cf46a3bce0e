// The admin API's counters (src/metrics/admin-api-metrics.ts): every series at 0 from the start,
// refusals by reason, audit jobs by kind and outcome, the running gauge; unknown labels ignored.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ADMIN_REFUSAL_REASONS } from '../../src/admin/index.ts';
import { AUDIT_JOB_OUTCOMES, adminApiMetrics } from '../../src/metrics/index.ts';
import { errorCode } from '../helpers/error-code.ts';
import { PROMTOOL, promtool } from '../helpers/promtool.ts';

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('admin API metrics', () => {
  it('exist at 0, then count refusals and audit jobs', async () => {
    const registry = new Registry();
    const events = adminApiMetrics(registry);
    let text = await registry.metrics();
    for (const reason of ADMIN_REFUSAL_REASONS) {
      expect(value(text, `cohort_admin_requests_refused_total{reason="${reason}"}`), reason).toBe(0);
    }
    for (const outcome of AUDIT_JOB_OUTCOMES) {
      expect(value(text, `cohort_admin_audit_jobs_total{kind="bundle",outcome="${outcome}"}`)).toBe(0);
    }
    events.refused('RATE_LIMITED_ADDRESS');
    events.refused('RATE_LIMITED_ADDRESS');
    events.refused('NOPE' as never);
    events.auditJobStarted('bundle');
    events.auditJobStarted('verify');
    events.auditJobEnded('bundle', 'cancelled');
    text = await registry.metrics();
    expect(value(text, 'cohort_admin_requests_refused_total{reason="RATE_LIMITED_ADDRESS"}')).toBe(2);
    expect(text).not.toContain('NOPE');
    expect(value(text, 'cohort_admin_audit_jobs_total{kind="bundle",outcome="cancelled"}')).toBe(1);
    expect(value(text, 'cohort_admin_audit_jobs_running{kind="bundle"}')).toBe(0);
    expect(value(text, 'cohort_admin_audit_jobs_running{kind="verify"}')).toBe(1);
    if (PROMTOOL !== undefined) {
      const check = promtool(['check', 'metrics'], text);
      expect(check.code, check.output).toBe(0);
    }
  });

  it('needs a registry', () => {
    expect(errorCode(() => adminApiMetrics(undefined as never))).toBe('INVALID_ARGUMENT');
  });
});
