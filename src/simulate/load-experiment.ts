import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { type LoadConfigOptions, loadYamlConfig, parseWithSchema } from '../config/index.ts';
import { ConfigError } from '../errors/index.ts';
import {
  type DataConfig,
  dataPaths,
  type ExperimentFile,
  experimentSchema,
  type RunConfig,
  runSchema,
} from './experiment-schema.ts';

/** A validated experiment: its name, output folder and fully resolved runs. */
export interface Experiment {
  readonly name: string;
  readonly outputDir: string;
  readonly runs: readonly RunConfig[];
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge: objects merge key by key, anything else (arrays included) is replaced. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

/**
 * Reads an experiment YAML file, validates it, and resolves each run (base deep-merged with the
 * run's overrides) against the run schema. Errors name the file, the run and the field path.
 */
export function loadExperiment(path: string, options: LoadConfigOptions = {}): Experiment {
  const file = loadYamlConfig(path, experimentSchema, options, 'COHORT_SIM__') as ExperimentFile;
  return resolveExperiment(file, path, { baseDir: dirname(path) });
}

/** Options of {@link resolveExperiment}. */
export interface ResolveExperimentOptions {
  /**
   * Folder that `idx` and `npy` data paths are relative to (the experiment file's); when given,
   * every data file must exist. CSV `path`s stay relative to the working directory, as before.
   */
  readonly baseDir?: string;
}

function resolveData(data: DataConfig, baseDir: string): DataConfig {
  const at = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));
  if (data.kind === 'idx') {
    return {
      ...data,
      train: { images: at(data.train.images), labels: at(data.train.labels) },
      test: { images: at(data.test.images), labels: at(data.test.labels) },
    };
  }
  if (data.kind === 'npy') return { ...data, features: at(data.features), labels: at(data.labels) };
  return data;
}

/**
 * Resolves an already-parsed experiment file (see {@link loadExperiment}). With `baseDir`, data
 * paths are resolved and checked: a missing file is `CONFIG_INVALID` naming the run and the field
 * (`runs[0] (x): data.train.images: no such file /abs/train-images.idx.gz`).
 */
export function resolveExperiment(
  file: ExperimentFile,
  source = 'experiment',
  options: ResolveExperimentOptions = {},
): Experiment {
  const runs = file.runs.map((run, i) => {
    const where = `${source} runs[${i}] (${run.name})`;
    const parsed = parseWithSchema(runSchema, deepMerge(structuredClone(file.base), structuredClone(run)), {
      source: where,
    }) as RunConfig;
    if (options.baseDir === undefined) return parsed;
    const resolved: RunConfig = { ...parsed, data: resolveData(parsed.data, options.baseDir) };
    for (const [field, p] of dataPaths(resolved.data)) {
      if (!existsSync(p) || !statSync(p).isFile()) {
        throw new ConfigError('CONFIG_INVALID', `${where}: ${field}: no such file ${p}`, {
          details: { path: field, file: p },
        });
      }
    }
    return resolved;
  });
  const names = new Set<string>();
  for (const r of runs) {
    if (names.has(r.name)) {
      throw new ConfigError('CONFIG_INVALID', `${source}: two runs are named ${r.name}`, {
        details: { path: 'runs' },
      });
    }
    names.add(r.name);
  }
  return { name: file.experiment, outputDir: file.outputDir, runs };
}
