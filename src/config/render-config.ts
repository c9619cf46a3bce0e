import type { CohortConfig, CohortConfigData } from './schema.ts';

/**
 * A plain, mutable deep copy of `config` (keys in schema order, defaults included), for
 * printing (`JSON.stringify`, YAML) or for building a modified configuration to re-validate.
 */
export function renderConfig(config: CohortConfig): CohortConfigData {
  return structuredClone(config) as CohortConfigData;
}
