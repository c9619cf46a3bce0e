import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

/**
 * `cohort config check <file>`: validates the file (with overrides) and prints
 * `ok: federation <id>`; an invalid file throws `CONFIG_INVALID` listing every bad field path.
 */
export function registerConfigCheckCommand(config: Command, ctx: CliContext): void {
  addConfigOptions(
    config
      .command('check')
      .description('validate a federation config file; exit 2 naming every bad field')
      .argument('<file>', 'YAML config file'),
  ).action((file: string, flags: ConfigFlags) => {
    const cfg = loadConfigWithFlags(file, flags, ctx);
    ctx.stdout.write(`ok: federation ${cfg.federation.id}\n`);
  });
}
