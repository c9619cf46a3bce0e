import { CommanderError } from 'commander';
import { CohortError } from '../errors/index.ts';
import { type CliContext, processContext } from './context/cli-context.ts';
import { createProgram } from './program.ts';

/** Exit status for a Cohort error (configuration, crypto, ...): the command ran and refused. */
export const EXIT_COHORT_ERROR = 2;
/**
 * Exit status of a usage error (an unknown command or option, a missing or malformed argument),
 * as commander reports them; commander's own default would be 1.
 */
export const EXIT_USAGE = 2;
/** Exit status for any other failure. */
export const EXIT_FAILURE = 1;

/**
 * Runs the `cohort` program on `argv` (node-style: `[node, script, ...args]`) and returns the
 * exit status: 0 on success; {@link EXIT_COHORT_ERROR} after printing `error [CODE]: message`
 * for a `CohortError`; {@link EXIT_USAGE} for commander's usage errors (already printed by
 * commander), a command's own `CommanderError` status otherwise (a finding's 3, help's 0);
 * {@link EXIT_FAILURE} after printing `error: message` for anything else.
 */
export async function runCli(argv: readonly string[], ctx: CliContext = processContext()): Promise<number> {
  try {
    await (await createProgram(ctx, argv)).parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CohortError) {
      ctx.stderr.write(`error [${err.code}]: ${err.message}\n`);
      return EXIT_COHORT_ERROR;
    }
    if (err instanceof CommanderError)
      return err.exitCode !== 0 && err.code.startsWith('commander.') ? EXIT_USAGE : err.exitCode;
    const message = err instanceof Error ? err.message : String(err);
    ctx.stderr.write(`error: ${message}\n`);
    if (ctx.env['COHORT_DEBUG'] && err instanceof Error && err.stack) ctx.stderr.write(`${err.stack}\n`);
    return EXIT_FAILURE;
  }
}
