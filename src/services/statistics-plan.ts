import type { CohortConfig } from '../config/index.ts';
import { contractFeatureCount as featuresOf } from '../data/index.ts';
import type { ChainCommit } from './federation-log/index.ts';

/** Whether the federation standardizes with federated statistics (`data.preprocessing.standardize`). */
export function federatedStandardization(config: CohortConfig): boolean {
  return config.data?.preprocessing.standardize === 'federated';
}

/** Features per row the data contract names (tabular features, or channels × height × width). */
export function contractFeatureCount(config: CohortConfig): number | null {
  return config.data === undefined ? null : featuresOf(config.data);
}

/** What statistics lookups need of the log's chain. */
export interface ChainView {
  commitAt(height: number): ChainCommit | undefined;
}

/** The latest statistics commit at or below `height` on the chain, if any. */
export function statisticsCommitAt(chain: ChainView, height: number): ChainCommit | undefined {
  for (let h = height; h >= 1; h--) {
    const c = chain.commitAt(h);
    if (c?.commit.kind === 'statistics') return c;
  }
  return undefined;
}
