import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { z } from 'zod';
import { ConfigError } from '../errors/index.ts';
import { type ConfigIssue, configInvalid } from './config-issues.ts';
import { applyOverrides, envOverrides, flagOverrides } from './overrides.ts';
import { parseWithSchema } from './parse-config.ts';
import { bootstrapConfigSchema, type CohortConfig, cohortConfigSchema, type DeepReadonly } from './schema.ts';

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /**
   * Environment to read `COHORT__A__B=value` overrides from (default `process.env`; pass `{}`
   * to ignore the environment).
   */
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * Overrides by dotted path, e.g. `{ 'nats.timeoutMs': 5000, 'crypto.ckks.coeffModulus[1]': '50' }`
   * (command-line flags). String values are parsed as YAML scalars unless the field is a string.
   */
  overrides?: Readonly<Record<string, unknown>>;
  /**
   * Accept a members section without `members.registry` (`bootstrapConfigSchema`): only for
   * `cohort registry create`, which makes the registry the pin will name. Default false.
   */
  unpinnedRegistry?: boolean;
}

/**
 * Reads a federation configuration from the YAML file at `path`, applies overrides and
 * validates it once. Precedence, highest first: `overrides` (flags) > `env` (`COHORT__*`
 * variables) > the file > schema defaults. Every problem is collected into one error.
 *
 * @throws ConfigError `CONFIG_UNREADABLE` when the file cannot be read (`details.file`).
 * @throws ConfigError `CONFIG_INVALID` on a YAML syntax error (with line and column), an override
 *   naming an unknown field, or any schema violation; the message lists `path: problem` per line.
 */
export function loadConfig(path: string, options: LoadConfigOptions = {}): CohortConfig {
  const schema = options.unpinnedRegistry === true ? bootstrapConfigSchema : cohortConfigSchema;
  return loadYamlConfig(path, schema, options, 'COHORT__');
}

/**
 * Reads any YAML document validated by `schema` the way {@link loadConfig} reads a federation
 * configuration: same syntax errors with line and column, same override rules (environment
 * variables under `envPrefix`, dotted-path flags), same path-naming issues, deeply frozen result.
 */
export function loadYamlConfig<S extends z.ZodType>(
  path: string,
  schema: S,
  options: LoadConfigOptions = {},
  envPrefix = 'COHORT__',
): DeepReadonly<z.output<S>> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code ?? (cause as Error).message;
    throw new ConfigError('CONFIG_UNREADABLE', `cannot read configuration file ${path} (${reason})`, {
      cause,
      details: { path: '(root)', file: path },
    });
  }

  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const issues: ConfigIssue[] = doc.errors.map((e) => {
      const pos = e.linePos?.[0];
      const where = pos === undefined ? '' : ` at line ${pos.line}, column ${pos.col}`;
      const first = e.message.split('\n')[0] ?? e.message;
      return {
        path: '(root)',
        message: `YAML syntax error${where}: ${first.replace(/ at line \d+, column \d+:?$/, '')}`,
      };
    });
    throw configInvalid(issues, path, doc.errors[0]);
  }

  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return parseWithSchema(schema, raw, { source: path });
  }
  const data = raw as Record<string, unknown>;
  const overrideIssues = applyOverrides(
    data,
    [...envOverrides(options.env ?? process.env, envPrefix), ...flagOverrides(options.overrides ?? {})],
    schema,
  );
  return parseWithSchema(schema, data, { source: path, priorIssues: overrideIssues });
}
