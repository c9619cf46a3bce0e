/**
 * Entry point of the `cohort` command (loaded by `bin/cohort.js`): runs the program on
 * `process.argv` and sets the exit status. Import {@link runCli} from `./index.ts` instead
 * when embedding; this module has side effects.
 */
import { runCli } from './run-cli.ts';

process.exitCode = await runCli(process.argv);
