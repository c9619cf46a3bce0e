import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { ConfigError } from '../errors/index.ts';
import { type ConfigIssue, configInvalid } from './config-issues.ts';
import { applyOverrides, envOverrides, flagOverrides } from './overrides.ts';
import { parseConfig } from './parse-config.ts';
import { type CohortConfig, cohortConfigSchema } from './schema.ts';

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
    return parseConfig(raw, { source: path });
  }
  const data = raw as Record<string, unknown>;
  const overrideIssues = applyOverrides(
    data,
    [...envOverrides(options.env ?? process.env), ...flagOverrides(options.overrides ?? {})],
    cohortConfigSchema,
  );
  return parseConfig(data, { source: path, priorIssues: overrideIssues });
}
