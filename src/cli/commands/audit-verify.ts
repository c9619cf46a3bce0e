import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DEFAULT_CKKS_PARAMS } from '../../../crypto/ckks/index.ts';
import {
  AuditError,
  type AuditOptions,
  type AuditReport,
  auditIncomplete,
  bundleAuditSource,
  decodeAuditBundle,
  resolveAuditTrust,
  verifyAudit,
} from '../../audit/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { ckksParamsOf } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { auditLines } from './audit-format.ts';
import {
  type AuditFlags,
  addAuditOptions,
  auditConfig,
  auditFinding,
  trustSources,
  withLiveSource,
} from './audit-session.ts';

export interface VerifyFlags extends AuditFlags {
  bundle?: string;
  genesis?: string;
  json?: boolean;
  skipContributions?: boolean;
}

/** Reads a bundle file whole; `BUNDLE_UNREADABLE` naming it when it cannot be read. */
export function readBundleFile(path: string): Uint8Array {
  try {
    return readFileSync(path);
  } catch (cause) {
    throw new AuditError(
      'BUNDLE_UNREADABLE',
      `cannot read the audit bundle ${path}: ${(cause as Error).message}`,
      {
        cause,
        details: { path },
      },
    );
  }
}

/**
 * The audit options of `cohort audit verify`'s flags: `--skip-aggregates`, `--skip-contributions`;
 * with a configuration, its CKKS parameters (besides the default set) to re-add the aggregates and
 * its `history.updateRetentionMs`, which tells a contribution gone with age (listed as expired)
 * from one never stored (a problem).
 */
export function auditVerifyOptions(
  flags: Pick<VerifyFlags, 'skipAggregates' | 'skipContributions'>,
  config: CohortConfig | undefined,
): AuditOptions {
  return {
    skipAggregates: flags.skipAggregates === true,
    skipContributions: flags.skipContributions === true,
    ckksParams: config === undefined ? [DEFAULT_CKKS_PARAMS] : [ckksParamsOf(config), DEFAULT_CKKS_PARAMS],
    ...(config === undefined ? {} : { contributionRetentionMs: config.history.updateRetentionMs }),
  };
}

async function runVerify(flags: VerifyFlags, ctx: CliContext): Promise<AuditReport> {
  const config = auditConfig(flags, ctx);
  const options = auditVerifyOptions(flags, config);
  const pins = flags.genesis === undefined ? {} : { genesisPin: flags.genesis };
  if (flags.bundle !== undefined) {
    if (flags.member !== undefined) {
      throw new InvalidArgumentError('--member reads a live log; it does not go with --bundle', {
        details: { name: 'member' },
      });
    }
    const bundle = decodeAuditBundle(readBundleFile(flags.bundle), flags.bundle);
    if (config !== undefined && config.federation.id !== bundle.meta.federation) {
      throw new AuditError(
        'AUDIT_TRUST_MISMATCH',
        `${flags.bundle} is a bundle of federation ${JSON.stringify(bundle.meta.federation)}, the configuration's is ${config.federation.id}`,
      );
    }
    const trust = resolveAuditTrust(
      { ...trustSources(flags, config, bundle.meta.federation), ...pins },
      bundle,
    );
    return verifyAudit(bundleAuditSource(bundle), trust, options);
  }
  if (config === undefined || flags.member === undefined) {
    throw new InvalidArgumentError(
      'give --bundle <file>, or --config <file> and --member <id> to audit the live log',
      { details: { name: flags.config === undefined ? 'config' : 'member' } },
    );
  }
  const trust = resolveAuditTrust({ ...trustSources(flags, config, config.federation.id), ...pins });
  return withLiveSource(config, flags.member, (source) => verifyAudit(source, trust, options));
}

/**
 * Why an incomplete audit is incomplete, in words: how many aggregates could not be read and how
 * many re-additions were not made for want of contributions, each with its unchecked code and the
 * first message, and what to do about each.
 */
export function incompleteMessage(report: Pick<AuditReport, 'unchecked'>): string {
  const parts: string[] = [];
  const aggregates = report.unchecked.filter((u) => u.code === 'AGGREGATE_UNREADABLE');
  if (aggregates.length > 0) {
    parts.push(
      `${aggregates.length} aggregate(s) could not be read, AGGREGATE_UNREADABLE (${aggregates[0]!.message}); use credentials that may read the aggregate store, or --skip-aggregates`,
    );
  }
  const contributions = report.unchecked.filter((u) => u.code === 'CONTRIBUTIONS_UNAVAILABLE');
  if (contributions.length > 0) {
    parts.push(
      `${contributions.length} aggregate(s) not re-added: contributions could not be read, CONTRIBUTIONS_UNAVAILABLE (${contributions[0]!.message}); use credentials (or a bundle) with the contributions, or --skip-contributions`,
    );
  }
  const unsealed = report.unchecked.find((u) => u.code === 'BUNDLE_UNSEALED');
  if (unsealed !== undefined) {
    parts.push(`BUNDLE_UNSEALED: ${unsealed.message}; export the bundle again with this version`);
  }
  return parts.length === 0 ? 'the audit is incomplete' : parts.join('; ');
}

/**
 * `cohort audit verify` (docs/log-format.md, "Auditing"): verifies a federation's log, live
 * (`--config <file> --member <auditor>`, the member's read-only NATS user) or from a bundle
 * (`--bundle <file>` written by `audit export`; `--config` then only supplies the trust), trusting
 * only the pinned registry (`--keys`, `--registry-sha256`) and the genesis of the configuration
 * (or the bundle's, pinned by `--genesis`). With a configuration, a contribution gone from a round
 * that ended more than `history.updateRetentionMs` ago is listed as expired, not as a problem.
 * `--skip-contributions` checks every aggregate without re-adding it (for a bundle exported
 * without contributions, such as an auditor token's from the admin API in `plain` mode). Prints
 * the report as aligned lines (see {@link auditLines}) or, with `--json`, the
 * {@link AuditReport} object.
 *
 * Exit 0: verified. 3: the audit ran and found a problem (the report lists each, at its entry's
 * sequence). 2: it could not run (bad flags, unreadable or malformed bundle, no keys to trust,
 * NATS unreachable), or ran but could not read an aggregate without `--skip-aggregates` or
 * contributions without `--skip-contributions` (`AUDIT_INCOMPLETE`, naming
 * `AGGREGATE_UNREADABLE` or `CONTRIBUTIONS_UNAVAILABLE`; the report is printed first).
 */
export function registerAuditVerifyCommand(audit: Command, ctx: CliContext): void {
  addAuditOptions(
    audit
      .command('verify')
      .description(
        'verify the federation log: signatures, hash chain, history rules, commit hashes, aggregates',
      )
      .option(
        '--bundle <file>',
        'verify an audit bundle (from `cohort audit export`) instead of the live log',
      )
      .option('--genesis <hash>', 'the genesis commit hash to require (hex)')
      .option(
        '--skip-contributions',
        'do not read the stored contributions: aggregates are checked, not re-added (listed as skipped)',
      )
      .option('--json', 'print the report as JSON (shape in docs/log-format.md)'),
  ).action(async (flags: VerifyFlags) => {
    const report = await runVerify(flags, ctx);
    if (flags.json === true) ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else
      ctx.stdout.write(
        auditLines(report)
          .map((l) => `${l}\n`)
          .join(''),
      );
    if (report.problems.length > 0) {
      const first = report.problems[0]!;
      ctx.stderr.write(
        `audit: ${report.problems.length} problem(s), the first at entry ${first.sequence}: ${first.code}\n`,
      );
      throw auditFinding(`${report.problems.length} problem(s)`);
    }
    if (auditIncomplete(report)) throw new AuditError('AUDIT_INCOMPLETE', incompleteMessage(report));
  });
}
