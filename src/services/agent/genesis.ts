import type { ModelSpec } from '../../../federation/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { federationGenesis as coordinatorGenesis, modelSpecFor } from '../../round/index.ts';
import type { Commit } from '../../versions/index.ts';

/** The federation's genesis as the agent uses it: model spec, initial parameters, genesis commit. */
export interface FederationGenesis {
  readonly spec: ModelSpec;
  /** `initParameters(spec, learning.initSeed)`: the same on every member. */
  readonly parameters: Float32Array;
  readonly commit: Commit;
}

/**
 * The genesis every member computes from the config alone. One definition for the federation: the
 * coordinator's (`src/round/genesis.ts`), whose commit hash is its head before
 * round 1; the agent must start from exactly that commit or every RoundOpen has the wrong base.
 */
export function federationGenesis(config: CohortConfig): FederationGenesis {
  const { commit, parameters } = coordinatorGenesis(config);
  return { spec: modelSpecFor(config), parameters, commit };
}
