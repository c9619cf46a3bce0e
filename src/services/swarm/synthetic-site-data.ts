import { type CohortConfig, parseSiteConfig, type SiteConfig } from '../../config/index.ts';
import type { SiteData } from '../../data/index.ts';
import { assertInteger, ConfigError, InvalidArgumentError } from '../../errors/index.ts';

/** What a swarm site trains on instead of files: a site configuration and its rows. */
export interface SyntheticSite {
  readonly siteConfig: SiteConfig;
  readonly siteData: SiteData;
}

/** Most synthetic rows per site. */
export const MAX_SYNTHETIC_ROWS = 100_000;

/**
 * `rows` synthetic training rows for the site at `index` of a federation whose data contract
 * (`config.data`) is tabular: class `c` of C is a Gaussian blob around the point whose feature
 * `j` is `cos(c + j)` (σ 0.5), labels round-robin, so every site holds every class and a linear
 * model can learn them. Deterministic in (`index`, row): the same site gets the same rows on
 * every start. The site configuration names no file (`<synthetic>`): the rows are handed to the
 * agent already read (`siteData`), as the CLI does after checking a site's files.
 *
 * @throws ConfigError `CONFIG_INVALID` (path `data`) without a tabular data contract;
 *   InvalidArgumentError for `rows` outside [1, {@link MAX_SYNTHETIC_ROWS}] or a negative `index`.
 */
export function syntheticSiteData(config: CohortConfig, index: number, rows: number): SyntheticSite {
  assertInteger('rows', rows, 1, MAX_SYNTHETIC_ROWS);
  assertInteger('index', index, 0, Number.MAX_SAFE_INTEGER);
  const contract = config.data;
  if (contract?.kind !== 'tabular' || contract.features === undefined) {
    throw new ConfigError(
      'CONFIG_INVALID',
      'synthetic swarm data needs a tabular data contract (`data.kind: tabular` with features)',
      { details: { path: 'data' } },
    );
  }
  const featureCount = contract.features.length;
  const classCount = contract.label.classes.length;
  if (classCount > 255) throw new InvalidArgumentError(`${classCount} classes do not fit byte labels`);
  const features = new Float32Array(rows * featureCount);
  const labels = new Uint8Array(rows);
  let state = (index * 0x9e3779b1 + 0x6d2b79f5) >>> 0;
  const uniform = () => {
    // mulberry32: a small, fast, seeded generator (quality is not the point here).
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  for (let r = 0; r < rows; r++) {
    const c = (r + index) % classCount;
    labels[r] = c;
    for (let j = 0; j < featureCount; j++)
      features[r * featureCount + j] = Math.cos(c + j) + 0.5 * gaussian();
  }
  return {
    siteConfig: parseSiteConfig({ data: { csv: { path: '<synthetic>' } } }),
    siteData: {
      train: { features, labels, count: rows, featureCount, classCount },
      validation: null,
      files: [],
    },
  };
}
