import { type LoadConfigOptions, loadYamlConfig, parseWithSchema } from '../config/index.ts';
import { ConfigError } from '../errors/index.ts';
import { type ExperimentFile, experimentSchema, type RunConfig, runSchema } from './experiment-schema.ts';

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
  return resolveExperiment(file, path);
}

/** Resolves an already-parsed experiment file (see {@link loadExperiment}). */
export function resolveExperiment(file: ExperimentFile, source = 'experiment'): Experiment {
  const runs = file.runs.map(
    (run, i) =>
      parseWithSchema(runSchema, deepMerge(structuredClone(file.base), structuredClone(run)), {
        source: `${source} runs[${i}] (${run.name})`,
      }) as RunConfig,
  );
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
