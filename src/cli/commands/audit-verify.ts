import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { DEFAULT_CKKS_PARAMS } from '../../../crypto/ckks/index.ts';
import {
  AuditError,
  type AuditReport,
  auditIncomplete,
  bundleAuditSource,
  decodeAuditBundle,
  resolveAuditTrust,
  verifyAudit,
} from '../../audit/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { ckksParamsOf } from '../../services/index.ts';
import type { CliContext } from '../cli-context.ts';
import { auditLines } from './audit-format.ts';
import {
  type AuditFlags,
  addAuditOptions,
  auditConfig,
  auditFinding,
  trustSources,
  withLiveSource,
} from './audit-session.ts';

interface VerifyFlags extends AuditFlags {
  bundle?: string;
  genesis?: string;
  json?: boolean;
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

async function runVerify(flags: VerifyFlags, ctx: CliContext): Promise<AuditReport> {
  const config = auditConfig(flags, ctx);
  // The configuration's CKKS parameters, besides the default set, re-add the aggregates.
  const options = {
    skipAggregates: flags.skipAggregates === true,
    ckksParams: config === undefined ? [DEFAULT_CKKS_PARAMS] : [ckksParamsOf(config), DEFAULT_CKKS_PARAMS],
  };
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
 * `cohort audit verify` (docs/log-format.md, "Auditing"): verifies a federation's log, live
 * (`--config <file> --member <auditor>`, the member's read-only NATS user) or from a bundle
 * (`--bundle <file>` written by `audit export`; `--config` then only supplies the trust), trusting
 * only the pinned registry (`--keys`, `--registry-sha256`) and the genesis of the configuration
 * (or the bundle's, pinned by `--genesis`). Prints the report as aligned lines (see
 * {@link auditLines}) or, with `--json`, the {@link AuditReport} object.
 *
 * Exit 0: verified. 3: the audit ran and found a problem (the report lists each, at its entry's
 * sequence). 2: it could not run (bad flags, unreadable or malformed bundle, no keys to trust,
 * NATS unreachable), or ran but could not read an aggregate without `--skip-aggregates`
 * (`AUDIT_INCOMPLETE`; the report is printed first).
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
    if (auditIncomplete(report)) {
      const n = report.unchecked.filter((u) => u.code === 'AGGREGATE_UNREADABLE').length;
      throw new AuditError(
        'AUDIT_INCOMPLETE',
        `${n} aggregate(s) could not be read (${report.unchecked.find((u) => u.code === 'AGGREGATE_UNREADABLE')!.message}); use credentials that may read the aggregate store, or --skip-aggregates`,
      );
    }
  });
}
