import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type Command, CommanderError } from 'commander';
import { AuditError, type AuditSource, openLiveAuditSource } from '../../audit/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { federationGenesis } from '../../round/index.ts';
import { memberConnectOptions, roleOf } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

/** Exit status of `audit verify` when it ran and found a problem. */
export const EXIT_AUDIT_FINDING = 3;

/** Exit status of a usage error in `audit` (the value of run-cli's `EXIT_COHORT_ERROR`). */
export const EXIT_AUDIT_USAGE = 2;

/** Flags shared by `audit verify` and `audit export`. */
export interface AuditFlags extends ConfigFlags {
  config?: string;
  member?: string;
  keys?: string;
  registrySha256?: string;
  skipAggregates?: boolean;
}

/**
 * Adds `--config`, `--member`, `--keys <registry file>`, `--registry-sha256 <hex>`,
 * `--skip-aggregates` and the config override flags.
 */
export function addAuditOptions(command: Command): Command {
  return addConfigOptions(
    command
      .option('-c, --config <file>', 'federation YAML (NATS servers, pinned registry, genesis)')
      .option('-m, --member <id>', 'member whose read-only NATS user reads the log (an auditor)')
      .option(
        '--keys <file>',
        'member registry file whose keys to trust (default: the configuration’s pinned registry)',
      )
      .option(
        '--registry-sha256 <hex>',
        'SHA-256 the trusted registry must have (default: the configuration’s pin)',
      )
      .option('--skip-aggregates', 'do not read the aggregate store (aggregates are listed as skipped)'),
  );
}

/** The configuration of `flags.config`, or undefined without one. */
export function auditConfig(flags: AuditFlags, ctx: CliContext): CohortConfig | undefined {
  return flags.config === undefined ? undefined : loadConfigWithFlags(flags.config, flags, ctx);
}

/** Where the trust of an audit comes from, given the flags and the configuration. */
export function trustSources(flags: AuditFlags, config: CohortConfig | undefined, federation: string) {
  const pin = config?.members?.registry;
  const registryFile = flags.keys ?? pin?.path;
  const registryPin = flags.registrySha256 ?? pin?.sha256;
  return {
    federation,
    ...(registryFile === undefined ? {} : { registryFile }),
    ...(registryPin === undefined ? {} : { registryPin }),
    ...(config === undefined ? {} : { genesis: federationGenesis(config).commit }),
  };
}

/**
 * Connects to NATS as `member` of `config` (its NKEY and TLS files only: no signing key is read)
 * and runs `fn` with a live audit source, closing the connection after.
 *
 * @throws AuditError `AUDIT_SOURCE_UNAVAILABLE` when NATS cannot be reached.
 */
export async function withLiveSource<T>(
  config: CohortConfig,
  member: string,
  fn: (source: AuditSource) => Promise<T>,
): Promise<T> {
  roleOf(config, member);
  let nc: NatsConnection;
  try {
    nc = await connect({ ...memberConnectOptions(config, member), timeout: config.nats.timeoutMs });
  } catch (cause) {
    throw new AuditError(
      'AUDIT_SOURCE_UNAVAILABLE',
      `cannot connect to NATS (${config.nats.servers.join(', ')}) as ${member}: ${(cause as Error).message}`,
      { cause, details: { member } },
    );
  }
  try {
    const source = await openLiveAuditSource(nc, {
      federation: config.federation.id,
      member,
      timeoutMs: config.nats.timeoutMs,
    });
    return await fn(source);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** The error that makes `runCli` exit {@link EXIT_AUDIT_FINDING}; print the report before throwing it. */
export function auditFinding(message: string): CommanderError {
  return new CommanderError(EXIT_AUDIT_FINDING, 'cohort.audit.finding', message);
}
