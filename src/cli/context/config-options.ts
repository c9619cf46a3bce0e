import type { Command } from 'commander';
import { type CohortConfig, type LoadConfigOptions, loadConfig } from '../../config/index.ts';
import { ConfigError } from '../../errors/index.ts';
import type { CliContext } from './cli-context.ts';

/** Options that {@link addConfigOptions} adds, as commander parses them. */
export interface ConfigFlags {
  /** `--set path=value` entries, in order. */
  set?: string[];
  /** `false` under `--no-env`. */
  env?: boolean;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/**
 * Adds the configuration flags every command that reads a config file shares:
 * `-s, --set <path=value>` (repeatable; highest precedence) and `--no-env` (ignore `COHORT__*`).
 */
export function addConfigOptions(command: Command): Command {
  return command
    .option(
      '-s, --set <path=value>',
      'override a config field, e.g. --set nats.timeoutMs=5000 (repeatable)',
      collect,
    )
    .option('--no-env', 'ignore COHORT__* environment overrides');
}

/**
 * Turns `--set` entries into a `{ path: value }` record (later entries win).
 *
 * @throws ConfigError `CONFIG_INVALID` for an entry without `=`.
 */
export function overridesFromFlags(entries: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq <= 0) {
      throw new ConfigError('CONFIG_INVALID', `--set expects path=value, got '${entry}'`, {
        details: { path: '(root)', flag: entry },
      });
    }
    out[entry.slice(0, eq).trim()] = entry.slice(eq + 1);
  }
  return out;
}

/**
 * Loads and validates `file` with the command's flags and the context's environment.
 * `options.unpinnedRegistry` is for `cohort registry create` alone (see `LoadConfigOptions`).
 */
export function loadConfigWithFlags(
  file: string,
  flags: ConfigFlags,
  ctx: CliContext,
  options: Pick<LoadConfigOptions, 'unpinnedRegistry'> = {},
): CohortConfig {
  return loadConfig(file, {
    env: flags.env === false ? {} : ctx.env,
    overrides: overridesFromFlags(flags.set),
    ...options,
  });
}
