import type { Command } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { packageVersion } from '../context/package-version.ts';

/** `cohort version`: prints `cohort <version> (node <version>)`. */
export function registerVersionCommand(program: Command, ctx: CliContext): void {
  program
    .command('version')
    .description('print the Cohort and Node.js versions')
    .action(() => {
      ctx.stdout.write(`cohort ${packageVersion()} (node ${process.version})\n`);
    });
}
