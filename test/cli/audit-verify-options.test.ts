// `cohort audit verify`'s options and its incomplete-audit message, without a federation: the
// configuration's retention reaches the audit (so a contribution gone with age is expired, not
// "not stored"), `--skip-contributions` maps to `skipContributions`, and an audit incomplete only
// for want of contributions names CONTRIBUTIONS_UNAVAILABLE (it used to throw a TypeError).
import { describe, expect, it } from 'vitest';
import { DEFAULT_CKKS_PARAMS } from '../../crypto/ckks/index.ts';
import type { AuditUnchecked } from '../../src/audit/index.ts';
import { auditVerifyOptions, incompleteMessage } from '../../src/cli/commands/audit-verify.ts';
import { parseConfig } from '../../src/config/index.ts';

const unchecked = (code: AuditUnchecked['code'], message: string): AuditUnchecked => ({
  sequence: 4,
  code,
  message,
});

describe('cohort audit verify options', () => {
  it("passes the configuration's history.updateRetentionMs and CKKS parameters", () => {
    const config = parseConfig({ federation: { id: 'opts' }, history: { updateRetentionMs: 86_400_000 } });
    const options = auditVerifyOptions({ skipContributions: true }, config);
    expect(options).toMatchObject({
      skipAggregates: false,
      skipContributions: true,
      contributionRetentionMs: 86_400_000,
    });
    expect(options.ckksParams).toHaveLength(2);
    // Without a configuration: the default parameters, no retention (every contribution must be there).
    expect(auditVerifyOptions({ skipAggregates: true }, undefined)).toEqual({
      skipAggregates: true,
      skipContributions: false,
      ckksParams: [DEFAULT_CKKS_PARAMS],
    });
  });

  it('an audit incomplete for want of contributions names CONTRIBUTIONS_UNAVAILABLE', () => {
    const only = incompleteMessage({
      unchecked: [
        unchecked('CONTRIBUTIONS_UNAVAILABLE', 'round 1: the bundle was exported without contributions'),
      ],
    });
    expect(only).toContain('CONTRIBUTIONS_UNAVAILABLE');
    expect(only).toContain('--skip-contributions');
    expect(only).toContain('round 1: the bundle was exported without contributions');
    expect(only).not.toContain('AGGREGATE_UNREADABLE');
    const both = incompleteMessage({
      unchecked: [
        unchecked('AGGREGATE_UNREADABLE', 'aggregate "round-2" not read'),
        unchecked('CONTRIBUTIONS_UNAVAILABLE', 'x'),
        unchecked('CONTRIBUTIONS_UNAVAILABLE', 'y'),
      ],
    });
    expect(both).toMatch(
      /^1 aggregate\(s\) could not be read, AGGREGATE_UNREADABLE .*; 2 aggregate\(s\) not re-added/,
    );
  });
});
