import { partitionIid } from '../../../federation/index.ts';
import type { Dataset } from '../../../gpu/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { loadMnist, subset } from '../../data/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';

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
  const sites = config.members?.sites.map((s) => s.id) ?? [];
  const index = sites.indexOf(site);
  if (index < 0) {
    throw new InvalidArgumentError(`${site} is not one of members.sites (${sites.join(', ')})`);
  }
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

/** The MNIST test rows an evaluating agent scores the committed model on (`learning.testLimit`). */
export function loadTestSet(config: CohortConfig): Dataset {
  const limit = config.learning.testLimit;
  return loadMnist('test', limit === undefined ? {} : { limit });
}
