import type { TextSink } from '../../log/index.ts';

export type { TextSink };

/** What commands write to and read from, injectable for tests. */
export interface CliContext {
  /** Command output (results, JSON). */
  readonly stdout: TextSink;
  /** Diagnostics and errors. */
  readonly stderr: TextSink;
  /** Environment, for `COHORT__*` configuration overrides. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The process's own streams and environment. */
export function processContext(): CliContext {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}
