import type { Dataset } from '../../../gpu/index.ts';
import { applyStandardizer, type Standardizer } from '../../data/index.ts';
import { decodeStatisticsParams, standardizerFromTotals } from '../../protocol/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { federatedStandardization, statisticsCommitAt } from '../statistics-plan.ts';
import type { AgentCore } from './agent-core.ts';

/** The rows a site trains and evaluates on. */
export interface SiteRows {
  readonly train: Dataset;
  readonly validation: Dataset | null;
  /** The federation's standardizer the rows went through (an external trainer applies it itself), or null. */
  readonly standardizer: Standardizer | null;
}

/** Standardized rows, kept per statistics commit (hex hash). */
const cache = new WeakMap<AgentCore, { readonly key: string; readonly rows: SiteRows }>();

/**
 * The site's rows at chain height `height`: as loaded, or — when the data contract standardizes
 * with federated statistics — mapped by the means and deviations of the statistics commit at or
 * below `height` (the same for every site). Null while the federation has no statistics yet (the
 * site cannot train or evaluate then).
 */
export function siteRows(core: AgentCore, height: number): SiteRows | null {
  const raw: SiteRows = { train: core.shard, validation: core.validation, standardizer: null };
  if (!federatedStandardization(core.ctx.config)) return raw;
  const stats = statisticsCommitAt(core.follower.history, height);
  if (stats === undefined) return null;
  const key = bytesToHex(stats.commit.hash);
  const cached = cache.get(core);
  if (cached?.key === key) return cached.rows;
  const standardizer = standardizerFromTotals(decodeStatisticsParams(stats.commit.params));
  const rows: SiteRows = {
    train: applyStandardizer(raw.train, standardizer),
    validation: raw.validation === null ? null : applyStandardizer(raw.validation, standardizer),
    standardizer,
  };
  cache.set(core, { key, rows });
  core.ctx.log.info({ statistics: key.slice(0, 12) }, 'rows standardized with the federation’s statistics');
  return rows;
}
