import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import type { ConfigIssue } from './config-issues.ts';
import { formatPath, parseDottedPath } from './format-path.ts';
import { objectKeys, type PathSegment, schemaAt, schemaDefault, schemaKind } from './schema-walk.ts';
import { suggestKey } from './suggest-key.ts';

/** Prefix of environment variables that override configuration: `COHORT__NATS__TIMEOUT_MS=5000`. */
export const ENV_PREFIX = 'COHORT__';

/** One override before it is applied: where it came from, the path as written, the value. */
export interface ConfigOverride {
  /** `environment variable COHORT__X__Y` or `override x.y`: named in error messages. */
  readonly source: string;
  /** Path as written (keys not yet matched against the schema). */
  readonly path: readonly PathSegment[];
  /** Strings are parsed as YAML scalars unless the target field is a string. */
  readonly value: unknown;
}

/**
 * Overrides from environment variables named `COHORT__A__B` (segments separated by `__`,
 * all-digit segments are array indices). Segments match keys case-insensitively and ignoring
 * `_` and `-`, so `COHORT__NATS__TIMEOUT_MS` sets `nats.timeoutMs`. Sorted by name so the
 * result does not depend on the environment's order.
 */
export function envOverrides(
  env: Readonly<Record<string, string | undefined>>,
  prefix: string = ENV_PREFIX,
): ConfigOverride[] {
  const out: ConfigOverride[] = [];
  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    if (value === undefined || !name.startsWith(prefix)) continue;
    const path = name
      .slice(prefix.length)
      .split('__')
      .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    out.push({ source: `environment variable ${name}`, path, value });
  }
  return out;
}

/** Overrides from a `{ 'dotted.path[1]': value }` record (e.g. command-line `--set` flags). */
export function flagOverrides(overrides: Readonly<Record<string, unknown>>): ConfigOverride[] {
  return Object.entries(overrides).map(([key, value]) => ({
    source: `override ${key}`,
    path: parseDottedPath(key) ?? [key],
    value,
  }));
}

const normalize = (key: string): string => key.toLowerCase().replaceAll(/[_-]/g, '');

type Resolved = { ok: true; path: PathSegment[] } | { ok: false; issue: ConfigIssue };

/** Matches a written path against the schema, returning the canonical path or an issue naming the bad segment. */
function resolvePath(schema: z.ZodType, override: ConfigOverride): Resolved {
  const path: PathSegment[] = [];
  if (override.path.length === 0 || override.path.some((s) => s === '')) {
    return { ok: false, issue: { path: '(root)', message: `malformed path in ${override.source}` } };
  }
  for (const seg of override.path) {
    const here = schemaAt(schema, path);
    const kind = here === undefined ? 'unknown' : schemaKind(here);
    if (kind === 'object') {
      const keys = objectKeys(here!) ?? [];
      const key =
        typeof seg === 'string'
          ? keys.includes(seg)
            ? seg
            : keys.find((k) => normalize(k) === normalize(seg))
          : undefined;
      if (key === undefined) {
        const hint = suggestKey(String(seg), keys);
        const why = hint === undefined ? 'unknown key' : `unknown key (did you mean '${hint}'?)`;
        return {
          ok: false,
          issue: { path: formatPath([...path, seg]), message: `${why}, from ${override.source}` },
        };
      }
      path.push(key);
    } else if (kind === 'array') {
      if (typeof seg !== 'number') {
        return {
          ok: false,
          issue: {
            path: formatPath(path),
            message: `is a list, '${seg}' is not an index, from ${override.source}`,
          },
        };
      }
      path.push(seg);
    } else {
      return {
        ok: false,
        issue: { path: formatPath(path), message: `has no field '${seg}', from ${override.source}` },
      };
    }
  }
  return { ok: true, path };
}

function coerce(value: unknown, target: z.ZodType | undefined): unknown {
  if (typeof value !== 'string') return value;
  if (target !== undefined && schemaKind(target) === 'string') return value;
  if (value === '') return value;
  try {
    return parseYaml(value);
  } catch {
    return value;
  }
}

const isContainer = (v: unknown): v is Record<PropertyKey, unknown> => typeof v === 'object' && v !== null;

/**
 * Applies `overrides` in order (later wins) to `doc`, a copy of the file's content, matching
 * each path against `schema`. A missing intermediate object or list is created (a list from its
 * schema default, so `coeffModulus[1]` can override one element of the default). Returns the
 * issues of overrides whose path is not in the schema; those are not applied.
 */
export function applyOverrides(
  doc: Record<string, unknown>,
  overrides: readonly ConfigOverride[],
  schema: z.ZodType,
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const o of overrides) {
    const r = resolvePath(schema, o);
    if (!r.ok) {
      issues.push(r.issue);
      continue;
    }
    let node: Record<PropertyKey, unknown> = doc;
    for (let i = 0; i < r.path.length - 1; i++) {
      const seg = r.path[i]!;
      let next = node[seg];
      if (!isContainer(next)) {
        const here = schemaAt(schema, r.path.slice(0, i + 1));
        const seeded = here === undefined ? undefined : schemaDefault(here);
        next = isContainer(seeded) ? seeded : typeof r.path[i + 1] === 'number' ? [] : {};
        node[seg] = next;
      }
      node = next as Record<PropertyKey, unknown>;
    }
    node[r.path[r.path.length - 1]!] = coerce(o.value, schemaAt(schema, r.path));
  }
  return issues;
}
