import { type Command, CommanderError } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerVersionsDiffCommand } from './versions-diff.ts';
import { registerVersionsExportCommand } from './versions-export.ts';
import { registerVersionsLogCommand } from './versions-log.ts';
import { registerVersionsRollbackCommand } from './versions-rollback.ts';
import { EXIT_USAGE } from './versions-session.ts';
import { registerVersionsShowCommand } from './versions-show.ts';

/**
 * `cohort versions …`: the federation's model versions as the verified federation log records them
 * (`log`, `show`, `diff`, `export`; `rollback` for operators). Each reads the whole log read-only as
 * `--member` (a site or the coordinator) and checks signatures, the hash chain and the history's
 * rules first. Exit codes: 0 ok; 3 a finding (the log does not verify; a rollback ABORTed or not
 * decided in time), with the error's code and message on stderr; 2 when the command could not run
 * (bad ref or flag, unreachable NATS, missing model). Usage errors commander reports (an unknown
 * subcommand or option, a missing argument) exit 2, as for every command.
 */
export function registerVersionsCommand(program: Command, ctx: CliContext): void {
  const versions = program
    .command('versions')
    .description('model versions from the verified federation log: log, show, diff, export, rollback')
    // Set before the subcommands are added: they inherit it.
    .exitOverride((err) => {
      throw err.exitCode === 0 ? err : new CommanderError(EXIT_USAGE, err.code, err.message);
    });
  registerVersionsLogCommand(versions, ctx);
  registerVersionsShowCommand(versions, ctx);
  registerVersionsDiffCommand(versions, ctx);
  registerVersionsExportCommand(versions, ctx);
  registerVersionsRollbackCommand(versions, ctx);
}
