import type { Command } from 'commander';
import { Option } from 'commander';
import { stringify as toYaml } from 'yaml';
import { renderConfig } from '../../config/index.ts';
import type { CliContext } from '../context/cli-context.ts';
import { addConfigOptions, type ConfigFlags, loadConfigWithFlags } from '../context/config-options.ts';

/** `cohort config print <file>`: prints the validated config, defaults filled and overrides applied. */
export function registerConfigPrintCommand(config: Command, ctx: CliContext): void {
  addConfigOptions(
    config
      .command('print')
      .description('print the effective config (validated, defaults filled, overrides applied)')
      .argument('<file>', 'YAML config file')
      .addOption(
        new Option('-f, --format <format>', 'output format').choices(['json', 'yaml']).default('json'),
      ),
  ).action((file: string, flags: ConfigFlags & { format: 'json' | 'yaml' }) => {
    const data = renderConfig(loadConfigWithFlags(file, flags, ctx));
    ctx.stdout.write(flags.format === 'yaml' ? toYaml(data) : `${JSON.stringify(data, null, 2)}\n`);
  });
}
