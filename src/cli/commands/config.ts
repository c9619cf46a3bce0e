import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerConfigCheckCommand } from './config-check.ts';
import { registerConfigPrintCommand } from './config-print.ts';

/** `cohort config …`: the `check` and `print` subcommands. */
export function registerConfigCommand(program: Command, ctx: CliContext): void {
  const config = program.command('config').description('validate and inspect federation config files');
  registerConfigCheckCommand(config, ctx);
  registerConfigPrintCommand(config, ctx);
}
