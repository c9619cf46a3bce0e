import { partitionIid } from '../../../federation/index.ts';
import type { Dataset } from '../../../gpu/index.ts';
import { type CohortConfig, parseSiteConfig, type SiteConfig } from '../../config/index.ts';
import { loadMnist, loadSiteData, type SiteData, subset } from '../../data/index.ts';
import { ConfigError, InvalidArgumentError } from '../../errors/index.ts';

/** One site's share of the training data. */
export interface SiteShard {
  /** Index of the site in `members.sites` (its partition). */
  readonly index: number;
  readonly sites: number;
  /** The site's rows: n_k = `data.count`. */
  readonly data: Dataset;
}

/**
 * The training rows of `site`: the first `learning.trainLimit` MNIST training rows (all 60,000
 * without it), split IID over `members.sites` in the config's order with
 * `partitionIid(count, sites, learning.initSeed)`; the site takes the part at its index. Every
 * site computes the same partition, so the shards are disjoint and cover the rows.
 */
export function loadSiteShard(config: CohortConfig, site: string): SiteShard {
  const { index, sites } = siteIndexOf(config, site);
  const limit = config.learning.trainLimit;
  const train = loadMnist('train', limit === undefined ? {} : { limit });
  if (train.count < sites.length) {
    throw new InvalidArgumentError(
      `learning.trainLimit ${train.count} is below the ${sites.length} sites: every site needs a row`,
    );
  }
  const parts = partitionIid(train.count, sites.length, config.learning.initSeed);
  return { index, sites: sites.length, data: subset(train, parts[index]!) };
}

/** `site`'s index in `members.sites` and the site ids, or `INVALID_ARGUMENT` naming them. */
function siteIndexOf(config: CohortConfig, site: string): { index: number; sites: string[] } {
  const sites = config.members?.sites.map((s) => s.id) ?? [];
  const index = sites.indexOf(site);
  if (index < 0) {
    throw new InvalidArgumentError(`${site} is not one of members.sites (${sites.join(', ')})`);
  }
  return { index, sites };
}

/**
 * A site's own data (`--site-config`): the files `siteConfig` names, read and checked against the
 * federation's data contract (`config.data`) by `loadSiteData`, then split into training and
 * validation rows. This is what the agent CLI runs before it connects to NATS.
 *
 * @throws ConfigError `CONFIG_INVALID` (path `data`) when the federation has no data contract, or
 *   when the site configuration does not fit it; `DataError` for any file that breaks it.
 */
export function loadContractData(config: CohortConfig, siteConfig: SiteConfig): SiteData {
  const contract = config.data;
  if (contract === undefined) {
    throw new ConfigError(
      'CONFIG_INVALID',
      "a site configuration needs the federation's data contract, and the federation configuration has no `data` section (docs/data-contract.md)",
      { details: { path: 'data' } },
    );
  }
  return loadSiteData(contract, siteConfig);
}

/** What a site agent trains and validates on, and the site configuration it came from. */
export interface AgentData {
  readonly shard: SiteShard;
  /** The site's validation rows (with a site configuration that has a `validation` section), else null. */
  readonly validation: Dataset | null;
  readonly siteConfig: SiteConfig | null;
}

/**
 * The agent's data. With `siteConfig`: the site's own files checked against the data contract
 * ({@link loadContractData}), or `preloaded` when the caller did that already (the CLI, before it
 * connects); the shard is the training rows. Without: the IID MNIST shard of {@link loadSiteShard}
 * and no validation rows (`preloaded` is then refused).
 */
export function loadAgentData(
  config: CohortConfig,
  site: string,
  siteConfig: SiteConfig | undefined,
  preloaded?: SiteData,
): AgentData {
  if (siteConfig === undefined) {
    if (preloaded !== undefined) {
      throw new InvalidArgumentError('siteData was given without the siteConfig it was loaded from');
    }
    return { shard: loadSiteShard(config, site), validation: null, siteConfig: null };
  }
  const { index, sites } = siteIndexOf(config, site);
  const checked = parseSiteConfig(siteConfig); // a configuration built in code gets its defaults here
  const data = preloaded ?? loadContractData(config, checked);
  return {
    shard: { index, sites: sites.length, data: data.train },
    validation: data.validation,
    siteConfig: checked,
  };
}

/** The MNIST test rows an evaluating agent scores the committed model on (`learning.testLimit`). */
export function loadTestSet(config: CohortConfig): Dataset {
  const limit = config.learning.testLimit;
  return loadMnist('test', limit === undefined ? {} : { limit });
}
