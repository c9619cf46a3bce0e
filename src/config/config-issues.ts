import type { z } from 'zod';
import { ConfigError } from '../errors/index.ts';
import { formatPath } from './format-path.ts';
import { objectKeys, type PathSegment, schemaAt } from './schema-walk.ts';
import { suggestKey } from './suggest-key.ts';

/** One validation problem: the field path (`crypto.ckks.coeffModulus[1]`) and what is wrong with it. */
export interface ConfigIssue {
  readonly path: string;
  readonly message: string;
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value === 'object' ? 'mapping' : typeof value}`;
}

function bound(origin: string, op: string, n: number | bigint): string {
  if (origin === 'array')
    return `must have ${op === '≤' ? 'at most' : 'at least'} ${n} item${n === 1 ? '' : 's'}`;
  if (origin === 'string')
    return `must be ${op === '≤' ? 'at most' : 'at least'} ${n} character${n === 1 ? '' : 's'} long`;
  return `must be ${op} ${n}`;
}

/**
 * zod error map giving short, uniform messages (`must be ≤ 60`, `is required`,
 * `must be one of 1, 2, 4, 8, got 3`). Returns `undefined` to keep zod's message for anything
 * it does not cover; messages set on the schema itself take precedence over this map.
 */
export const configErrorMap: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type': {
      if (issue.input === undefined) return 'is required';
      if (issue.expected === 'int' && typeof issue.input === 'number' && Number.isFinite(issue.input)) {
        return `must be an integer, got ${issue.input}`;
      }
      if (issue.expected === 'number' && typeof issue.input === 'number') return 'must be a finite number';
      const names: Record<string, string> = { object: 'a mapping', array: 'a list', int: 'an integer' };
      const expected =
        names[issue.expected] ?? `${/^[aeiou]/.test(issue.expected) ? 'an' : 'a'} ${issue.expected}`;
      return `must be ${expected}, got ${show(issue.input)}`;
    }
    case 'too_big':
      return bound(issue.origin, issue.inclusive === false ? '<' : '≤', issue.maximum);
    case 'too_small':
      return bound(issue.origin, issue.inclusive === false ? '>' : '≥', issue.minimum);
    case 'invalid_value':
      return `must be one of ${issue.values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ')}, got ${show(issue.input)}`;
    default:
      return undefined;
  }
};

/**
 * Converts zod issues to {@link ConfigIssue}s, one per unknown key (with a did-you-mean hint
 * looked up in `schema`), paths formatted by {@link formatPath}.
 */
export function toConfigIssues(issues: readonly z.core.$ZodIssue[], schema: z.ZodType): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    const path = issue.path as PathSegment[];
    if (issue.code === 'unrecognized_keys') {
      const here = schemaAt(schema, path);
      const known = here === undefined ? [] : (objectKeys(here) ?? []);
      for (const key of issue.keys) {
        const hint = suggestKey(key, known);
        out.push({
          path: formatPath([...path, key]),
          message: hint === undefined ? 'unknown key' : `unknown key (did you mean '${hint}'?)`,
        });
      }
    } else {
      out.push({ path: formatPath(path), message: issue.message });
    }
  }
  return out;
}

/**
 * The `CONFIG_INVALID` error for a list of issues. Its message names the source and lists
 * each issue on its own line as `path: message`; `details.issues` holds them all,
 * `details.path` the first one's path and `details.file` the source, when given.
 */
export function configInvalid(issues: readonly ConfigIssue[], source?: string, cause?: unknown): ConfigError {
  const head = `invalid configuration${source === undefined ? '' : ` in ${source}`} (${issues.length} issue${issues.length === 1 ? '' : 's'}):`;
  const lines = issues.map((i) => `  ${i.path}: ${i.message}`);
  const details: Record<string, unknown> = {
    path: issues[0]?.path ?? '(root)',
    issues: issues.map((i) => ({ path: i.path, message: i.message })),
  };
  if (source !== undefined) details['file'] = source;
  return new ConfigError('CONFIG_INVALID', [head, ...lines].join('\n'), { details, cause });
}
