import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerDataCheckCommand } from './data-check.ts';
import { registerDataSplitCommand } from './data-split.ts';

/** `cohort data …`: `split` the bundled MNIST into site folders, `check` site data files. */
export function registerDataCommand(program: Command, ctx: CliContext): void {
  const data = program
    .command('data')
    .description('site data files: split MNIST into per-site folders, check IDX, .npy and CSV files');
  registerDataSplitCommand(data, ctx);
  registerDataCheckCommand(data, ctx);
}
