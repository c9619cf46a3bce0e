export type { CommandRegistrar } from './command-registrar.ts';
export { type CliContext, processContext, type TextSink } from './context/cli-context.ts';
export {
  addConfigOptions,
  type ConfigFlags,
  loadConfigWithFlags,
  overridesFromFlags,
} from './context/config-options.ts';
export { packageVersion } from './context/package-version.ts';
export { COMMANDS, commandOf, createProgram, type LazyCommand } from './program.ts';
export { EXIT_COHORT_ERROR, EXIT_FAILURE, EXIT_USAGE, runCli } from './run-cli.ts';
