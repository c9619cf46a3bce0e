import { type Command, CommanderError } from 'commander';
import type { CliContext } from '../context/cli-context.ts';
import { registerAuditExportCommand } from './audit-export.ts';
import { EXIT_AUDIT_USAGE } from './audit-session.ts';
import { registerAuditVerifyCommand } from './audit-verify.ts';

/**
 * `cohort audit …`: an auditor's independent verification of the federation log with read-only
 * credentials (`verify`), and the bundle an auditor verifies offline (`export`). Exit codes: 0
 * verified; 3 the audit found a problem; 2 it could not run (usage errors included).
 */
export function registerAuditCommand(program: Command, ctx: CliContext): void {
  const audit = program
    .command('audit')
    .description('verify the federation log as an auditor: verify (live or a bundle), export a bundle')
    // Set before the subcommands are added: they inherit it.
    .exitOverride((err) => {
      throw err.exitCode === 0 ? err : new CommanderError(EXIT_AUDIT_USAGE, err.code, err.message);
    });
  registerAuditVerifyCommand(audit, ctx);
  registerAuditExportCommand(audit, ctx);
}
