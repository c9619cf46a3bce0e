import { dirname, isAbsolute, resolve } from 'node:path';
import { InvalidArgumentError } from '../errors/index.ts';
import { type ConfigIssue, configInvalid } from './config-issues.ts';
import type { DataContract } from './data-contract-schema.ts';
import { deepFreeze } from './deep-freeze.ts';
import { formatPath } from './format-path.ts';
import { type LoadConfigOptions, loadYamlConfig } from './load-config.ts';
import { parseWithSchema } from './parse-config.ts';
import { type SiteConfig, type SiteConfigData, siteConfigSchema } from './site-config-schema.ts';
import { suggestKey } from './suggest-key.ts';

/** Prefix of the environment variables that override site configuration fields (`COHORT_SITE__DATA__CSV__PATH`). */
export const SITE_ENV_PREFIX = 'COHORT_SITE__';

/** Options of {@link parseSiteConfig}. */
export interface ParseSiteConfigOptions {
  /** The file the data came from: named in errors, and relative data paths are resolved against its folder. */
  readonly file?: string;
}

/** `data` with every relative file path resolved against `dir`. */
function resolveDataPaths(data: SiteConfigData['data'], dir: string): SiteConfigData['data'] {
  const at = (p: string) => (isAbsolute(p) ? p : resolve(dir, p));
  const { csv, idx, npy } = data;
  return {
    ...(csv === undefined ? {} : { csv: { ...csv, path: at(csv.path) } }),
    ...(idx === undefined ? {} : { idx: { images: at(idx.images), labels: at(idx.labels) } }),
    ...(npy === undefined ? {} : { npy: { features: at(npy.features), labels: at(npy.labels) } }),
  };
}

/** `parsed` (a private copy) with its data paths resolved against `file`'s folder, `file` set, frozen. */
function withFile(parsed: SiteConfigData, file: string): SiteConfig {
  return deepFreeze({ ...parsed, data: resolveDataPaths(parsed.data, dirname(file)), file }) as SiteConfig;
}

/**
 * Validates a site configuration given as data (e.g. `AgentOptions.siteConfig`), fills defaults
 * and returns it deeply frozen. With `options.file`, relative data paths are resolved against
 * that file's folder; without, they stay as given (relative to the working directory).
 *
 * @throws ConfigError `CONFIG_INVALID` listing every issue as `path: problem`.
 */
export function parseSiteConfig(input: unknown, options: ParseSiteConfigOptions = {}): SiteConfig {
  let body = input;
  let carried: string | undefined;
  if (typeof input === 'object' && input !== null && !Array.isArray(input) && 'file' in input) {
    // A configuration loaded from a file (paths resolved already) may be validated again.
    const { file, ...rest } = input as { file?: unknown };
    body = rest;
    if (typeof file === 'string') carried = file;
  }
  const source = options.file ?? carried;
  const parsed = parseWithSchema(siteConfigSchema, body, source === undefined ? {} : { source });
  const copy = structuredClone(parsed) as SiteConfigData;
  if (options.file !== undefined) return withFile(copy, options.file);
  return deepFreeze(carried === undefined ? copy : { ...copy, file: carried }) as SiteConfig;
}

/**
 * Reads a site's own configuration (`--site-config site.yaml`) the way {@link loadConfig} reads the
 * federation's: YAML errors with line and column, every schema issue with its path, overrides from
 * `COHORT_SITE__*` variables and `options.overrides`, deeply frozen. Data paths are resolved
 * against the file's folder and `file` is set to `path`.
 *
 * @throws ConfigError `CONFIG_UNREADABLE` when the file cannot be read; `CONFIG_INVALID` otherwise.
 */
export function loadSiteConfig(path: string, options: LoadConfigOptions = {}): SiteConfig {
  if (typeof path !== 'string' || path === '') {
    throw new InvalidArgumentError(`path must be a site configuration file name, got ${String(path)}`);
  }
  const loaded = loadYamlConfig(path, siteConfigSchema, options, SITE_ENV_PREFIX);
  return withFile(structuredClone(loaded) as SiteConfigData, path);
}

/**
 * Checks a site configuration against the federation's data contract, before any file is read:
 * an image contract takes `idx` or `npy` files, not `csv`; every key of `data.csv.columns` is a
 * contract feature; no two features, and no feature and the label, read the same CSV column.
 *
 * @throws ConfigError `CONFIG_INVALID` naming the site configuration's fields (and `site.file`).
 */
export function checkSiteConfig(site: SiteConfig, contract: DataContract): void {
  const issues: ConfigIssue[] = [];
  const csv = site.data.csv;
  if (csv !== undefined) {
    if (contract.kind !== 'tabular') {
      issues.push({
        path: 'data.csv',
        message: `the federation's data contract is of kind '${contract.kind}': give idx or npy files`,
      });
    } else {
      const features = (contract.features ?? []).map((f) => f.name);
      for (const key of Object.keys(csv.columns)) {
        if (!features.includes(key)) {
          const hint = suggestKey(key, features);
          issues.push({
            path: formatPath(['data', 'csv', 'columns', key]),
            message: `not a feature of the data contract${hint === undefined ? '' : ` (did you mean '${hint}'?)`}`,
          });
        }
      }
      const label = csv.label ?? contract.label.name ?? '';
      const readers = new Map<string, string>([[label, 'the label']]);
      for (const name of features) {
        const column = csv.columns[name] ?? name;
        const other = readers.get(column);
        if (other !== undefined) {
          issues.push({
            path: formatPath(['data', 'csv', 'columns', name]),
            message: `feature ${name} would read column ${JSON.stringify(column)}, which is ${other === 'the label' ? 'the label column' : `the column of feature ${other}`}`,
          });
        } else {
          readers.set(column, name);
        }
      }
    }
  }
  if (issues.length > 0) throw configInvalid(issues, site.file);
}
