export { type CliContext, processContext, type TextSink } from './cli-context.ts';
export type { CommandRegistrar } from './command-registrar.ts';
export {
  addConfigOptions,
  type ConfigFlags,
  loadConfigWithFlags,
  overridesFromFlags,
} from './config-options.ts';
export { packageVersion } from './package-version.ts';
export { createProgram } from './program.ts';
export { EXIT_COHORT_ERROR, EXIT_FAILURE, runCli } from './run-cli.ts';
