import { initParameters, logisticRegression, MNIST_2NN, type ModelSpec } from '../../../federation/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { type Commit, genesisCommit } from '../../versions/index.ts';
import { encodeRoundParams } from './round-params.ts';

/** The model of `learning.model`: `2nn` → MNIST 2NN, `logreg` → logistic regression 784 → 10. */
export function modelSpecFor(config: CohortConfig): ModelSpec {
  return config.learning.model === 'logreg' ? logisticRegression(784, 10) : MNIST_2NN;
}

/**
 * The genesis every member computes without any secret: parameters = `initParameters(spec,
 * learning.initSeed)`, commit = `genesisCommit(parameters, params)` with params =
 * `encodeRoundParams({ round: 0, bits: codec.bits, clip: codec.clip, strategy, learningRate })`.
 */
export function federationGenesis(config: CohortConfig): { commit: Commit; parameters: Float32Array } {
  const parameters = initParameters(modelSpecFor(config), config.learning.initSeed);
  const params = encodeRoundParams({
    round: 0,
    bits: config.codec.bits,
    clip: config.codec.clip,
    strategy: config.learning.strategy,
    learningRate: config.learning.learningRate,
  });
  return { commit: genesisCommit(parameters, params), parameters };
}
