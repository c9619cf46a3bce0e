import type { z } from 'zod';
import { type ConfigIssue, configErrorMap, configInvalid, toConfigIssues } from './config-issues.ts';
import { deepFreeze } from './deep-freeze.ts';
import { bootstrapConfigSchema, type CohortConfig, cohortConfigSchema, type DeepReadonly } from './schema.ts';

/** Options of {@link parseConfig}. */
export interface ParseConfigOptions {
  /** Where the data came from (a file name), named in the error message. */
  source?: string;
  /** Issues found before validation (e.g. bad override paths), reported together with the schema's. */
  priorIssues?: readonly ConfigIssue[];
  /**
   * Accept a members section without `members.registry` ({@link bootstrapConfigSchema}): only for
   * `cohort registry create`, which makes the registry the pin will name. Default false.
   */
  unpinnedRegistry?: boolean;
}

/**
 * Validates `input` (already-parsed configuration data) against {@link cohortConfigSchema},
 * fills defaults and returns the result deeply frozen. Does not read the environment.
 *
 * @throws ConfigError `CONFIG_INVALID` listing every issue, one per line, as
 *   `crypto.ckks.coeffModulus[1]: must be ≤ 60`; `details.issues` is `[{ path, message }]`.
 */
export function parseConfig(input: unknown, options: ParseConfigOptions = {}): CohortConfig {
  return parseWithSchema(
    options.unpinnedRegistry === true ? bootstrapConfigSchema : cohortConfigSchema,
    input,
    options,
  );
}

/** {@link parseConfig} for any schema: same error format, deeply frozen result. */
export function parseWithSchema<S extends z.ZodType>(
  schema: S,
  input: unknown,
  options: ParseConfigOptions = {},
): DeepReadonly<z.output<S>> {
  const result = schema.safeParse(input, { error: configErrorMap });
  const issues = [...(options.priorIssues ?? [])];
  if (!result.success) issues.push(...toConfigIssues(result.error.issues, schema));
  if (issues.length > 0 || !result.success) throw configInvalid(issues, options.source);
  return deepFreeze(result.data) as DeepReadonly<z.output<S>>;
}
