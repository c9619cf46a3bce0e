// The shipped Prometheus rules (deploy/prometheus): promtool checks them and runs their unit
// tests (a firing and a quiet case per alert), and each alert carries what docs/metrics.md says.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { NO_PROMTOOL, PROMTOOL, promtool } from '../helpers/promtool.ts';

const DIR = join(import.meta.dirname, '..', '..', 'deploy', 'prometheus');

interface Rule {
  readonly record?: string;
  readonly alert?: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

const groups = (
  parse(readFileSync(join(DIR, 'cohort.rules.yaml'), 'utf8')) as {
    groups: { name: string; rules: Rule[] }[];
  }
).groups;
const alerts = groups.flatMap((g) => g.rules.filter((r) => r.alert !== undefined));

describe('deploy/prometheus/cohort.rules.yaml', () => {
  const skip = PROMTOOL === undefined ? ` (skipped: ${NO_PROMTOOL})` : '';

  it.skipIf(PROMTOOL === undefined)(`passes promtool check rules${skip}`, () => {
    const r = promtool(['check', 'rules', 'cohort.rules.yaml'], undefined, DIR);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.code).toBe(0);
  });

  it.skipIf(PROMTOOL === undefined)(`passes its unit tests (promtool test rules)${skip}`, () => {
    const r = promtool(['test', 'rules', 'cohort.rules.test.yaml'], undefined, DIR);
    expect(r.output).toMatch(/SUCCESS/);
    expect(r.code).toBe(0);
  });

  it('has the alert of every target, each with severity, for, summary and description', () => {
    expect(alerts.map((a) => a.alert).sort()).toEqual(
      [
        'CohortBreakerDegraded',
        'CohortCompressionLow',
        'CohortCulpritNamed',
        'CohortCoordinatorDown',
        'CohortForgedMessages',
        'CohortHeartbeatLossHigh',
        'CohortNoRecentCommit',
        'CohortPrivacyBudgetLow',
        'CohortRejectedMessagesSpike',
        'CohortSyncLatencyHigh',
        'CohortTrainingFrozen',
        'CohortVersionDrift',
      ].sort(),
    );
    for (const a of alerts) {
      expect(['critical', 'warning', 'info'], a.alert).toContain(a.labels?.severity);
      expect(a.for, a.alert).toMatch(/^\d+[smh]$/);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
      expect(a.annotations?.description, a.alert).toBeTruthy();
    }
    expect(alerts.find((a) => a.alert === 'CohortCoordinatorDown')!.expr).toMatch(/absent\(/);
  });

  it('names recording rules level:metric:operations and guards every ratio against an empty denominator', () => {
    for (const g of groups) expect(g.name).toMatch(/^cohort-[a-z]+$/);
    const records = groups.flatMap((g) => g.rules.filter((r) => r.record !== undefined));
    expect(records.length).toBeGreaterThan(0);
    for (const r of records) {
      expect(r.record).toMatch(/^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$/);
      if (/ratio/.test(r.record!)) expect(r.expr, r.record).toMatch(/\/\s*\([\s\S]*> 0\)/);
    }
  });

  it('has a firing and a quiet case per alert in its unit tests', () => {
    const tests = (
      parse(readFileSync(join(DIR, 'cohort.rules.test.yaml'), 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests;
    const cases = tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const a of alerts) {
      const mine = cases.filter((c) => c.alertname === a.alert);
      expect(
        mine.some((c) => c.exp_alerts.length > 0),
        `${a.alert} fires`,
      ).toBe(true);
      expect(
        mine.some((c) => c.exp_alerts.length === 0),
        `${a.alert} stays quiet`,
      ).toBe(true);
    }
  });
});
