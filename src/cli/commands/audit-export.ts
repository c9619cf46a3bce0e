import type { Command } from 'commander';
import { wipeSigningKeyPair } from '../../../crypto/signature/index.ts';
import { exportAuditBundle, loadBundleSigner, resolveAuditTrust } from '../../audit/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import {
  type AuditFlags,
  addAuditOptions,
  auditConfig,
  trustSources,
  withLiveSource,
} from './audit-session.ts';
import { openBundleFile } from './bundle-file.ts';

interface ExportFlags extends AuditFlags {
  out: string;
  force?: boolean;
  skipContributions?: boolean;
}

/**
 * `cohort audit export --config <file> --member <id> --out <file> [--skip-aggregates]
 * [--skip-contributions] [--force]`: writes an audit bundle (docs/log-format.md, "Auditing") of the
 * live log, sealed with the member's signing key and read with its read-only NATS user: every
 * stored entry byte for byte, the
 * aggregate of every COMMIT (from the aggregate store, which the member's user must be allowed to
 * read unless `--skip-aggregates`), the stored contributions the log lists (unless
 * `--skip-contributions`, or the member may not read them), and copies of the trusted registry file
 * and the genesis commit. The bundle is streamed into a temporary file beside `--out` as it is read
 * (never held in memory) and put in place whole, or not at all (mode 0644). Prints `exported <n>
 * entries (last <seq>), <k> aggregates to <file>`.
 *
 * Exit 0; 2 when it cannot run (no keys to trust, NATS or an aggregate unreadable, `--out` exists
 * without `--force`).
 */
export function registerAuditExportCommand(audit: Command, ctx: CliContext): void {
  addAuditOptions(
    audit
      .command('export')
      .description('write an audit bundle of the live log (entries, aggregates, registry, genesis)')
      .requiredOption('-o, --out <file>', 'bundle file to write')
      .option('--skip-contributions', 'leave the stored contributions out (the bundle says so)')
      .option('-f, --force', 'overwrite an existing file'),
  ).action(async (flags: ExportFlags) => {
    const config = auditConfig(flags, ctx);
    if (config === undefined || flags.member === undefined) {
      throw new InvalidArgumentError('audit export needs --config <file> and --member <id>', {
        details: { name: config === undefined ? 'config' : 'member' },
      });
    }
    const trust = resolveAuditTrust(trustSources(flags, config, config.federation.id));
    const signer = loadBundleSigner(config, flags.member);
    const file = openBundleFile(flags.out, { force: flags.force === true, mode: 0o644 });
    let summary: Awaited<ReturnType<typeof exportAuditBundle>>;
    try {
      summary = await withLiveSource(config, flags.member, (source) =>
        exportAuditBundle(
          source,
          {
            registry: trust.registry,
            genesis: trust.genesis,
            skipAggregates: flags.skipAggregates === true,
            skipContributions: flags.skipContributions === true,
            signer,
          },
          (chunk) => file.write(chunk),
        ),
      );
      file.commit();
    } catch (err) {
      file.discard();
      throw err;
    } finally {
      wipeSigningKeyPair(signer.key);
    }
    ctx.stdout.write(
      `exported ${summary.entries} entries (last ${summary.lastSequence}), ${summary.aggregates === 'skipped' ? 'aggregates skipped' : `${summary.objects} aggregates${summary.absent > 0 ? `, ${summary.absent} absent from the store` : ''}`} to ${flags.out}\n`,
    );
  });
}
