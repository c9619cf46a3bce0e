import {
  initParameters,
  logisticRegression,
  MNIST_2NN,
  type ModelSpec,
  mlp,
} from '../../../federation/index.ts';
import type { CohortConfig } from '../../config/index.ts';
import { type Commit, genesisCommit } from '../../versions/index.ts';
import { encodeRoundParams } from './round-params.ts';

/**
 * The model of `learning.model`: `2nn` → MNIST 2NN, `logreg` → logistic regression 784 → 10,
 * `mlp` → 784 → `learning.hidden`… → 10.
 */
export function modelSpecFor(config: CohortConfig): ModelSpec {
  const { model, hidden } = config.learning;
  if (model === 'logreg') return logisticRegression(784, 10);
  if (model === 'mlp') return mlp(784, hidden ?? [], 10);
  return MNIST_2NN;
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
