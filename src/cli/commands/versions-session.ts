import { type Command, CommanderError } from 'commander';
import type { CohortConfig } from '../../config/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import { type FederationTimeline, readTimeline, syncTimeline } from '../../history/index.ts';
import { federationGenesis } from '../../round/index.ts';
import {
  FederationLogError,
  type FederationLogReader,
  openLogReader,
} from '../../services/federation-log/index.ts';
import { type MemberContext, openMember, roleOf } from '../../services/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

/** Exit status of a usage error in `versions` (the value of run-cli's `EXIT_COHORT_ERROR`: the command could not run). */
export const EXIT_USAGE = 2;

/** Exit status of a `versions` command that ran and found a problem: a log that does not verify, an ABORTed or unseen rollback. */
export const EXIT_FINDING = 3;

/** Log errors that are findings about the log itself (exit {@link EXIT_FINDING}), not a failure to read it. */
const LOG_FINDINGS: ReadonlySet<string> = new Set([
  'LOG_ENTRY_INVALID',
  'LOG_CHAIN_BROKEN',
  'LOG_HISTORY_INVALID',
  'LOG_BEHIND',
]);

/** Flags every `versions` subcommand takes. */
export interface VersionsFlags extends ConfigFlags {
  config: string;
  member?: string;
}

/**
 * Adds `--config <file>` and `--member <id>` (required unless `memberDefault` describes a default)
 * and the config override flags.
 */
export function addVersionsOptions(command: Command, memberDefault?: string): Command {
  command.requiredOption('-c, --config <file>', 'federation YAML');
  if (memberDefault === undefined) {
    command.requiredOption(
      '-m, --member <id>',
      'member whose keys and NATS user to use (a site or the coordinator)',
    );
  } else {
    command.option('-m, --member <id>', `member whose keys and NATS user to use (default: ${memberDefault})`);
  }
  return addConfigOptions(command);
}

/** A member connected to NATS with the federation's log read and verified. */
export interface VersionsSession {
  readonly config: CohortConfig;
  readonly member: MemberContext;
  readonly reader: FederationLogReader;
  readonly timeline: FederationTimeline;
  /** Reads the log's new entries into {@link VersionsSession.timeline}. */
  sync(): Promise<number>;
}

/**
 * Runs `fn` with a {@link VersionsSession} for `flags` (member: `flags.member`, else
 * `defaultMember(config)`), closing the connection after. The member must be able to read the log
 * stream (a site or the coordinator; an aggregator's NATS user cannot). A log that does not verify,
 * when first read or during `fn`, is a finding: `error [CODE]: message` on stderr and exit
 * {@link EXIT_FINDING}.
 */
export async function withVersionsSession<T>(
  flags: VersionsFlags,
  ctx: CliContext,
  fn: (session: VersionsSession) => Promise<T>,
  defaultMember?: (config: CohortConfig) => string,
): Promise<T> {
  const config = loadConfigWithFlags(flags.config, flags, ctx);
  const id = flags.member ?? defaultMember?.(config);
  if (id === undefined)
    throw new InvalidArgumentError('--member <id> is required', { details: { name: 'member' } });
  if (roleOf(config, id) === 'aggregator') {
    throw new InvalidArgumentError(
      `--member ${id} is an aggregator, whose NATS user may not read the federation log; use a site or the coordinator`,
      { details: { name: 'member' } },
    );
  }
  const member = await openMember(config, id);
  try {
    const reader = await openLogReader(member.transport.connection, {
      federation: config.federation.id,
      coordinator: member.members.coordinator,
      keys: member.keys,
    });
    const timeline = await readTimeline(reader, federationGenesis(config).commit);
    return await fn({ config, member, reader, timeline, sync: () => syncTimeline(reader, timeline) });
  } catch (err) {
    if (err instanceof FederationLogError && LOG_FINDINGS.has(err.code)) {
      ctx.stderr.write(`error [${err.code}]: ${err.message}\n`);
      throw finding(err.message);
    }
    throw err;
  } finally {
    await member.close();
  }
}

/** The error that makes `runCli` exit {@link EXIT_FINDING}; print what was found before throwing it. */
export function finding(message: string): CommanderError {
  return new CommanderError(EXIT_FINDING, 'cohort.versions.finding', message);
}
