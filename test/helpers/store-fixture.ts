// Hand-made versions for the model-store tests: a four-weight model and candidates that add a
// constant to every weight, with a FedAdam state whose step is the round.
import type { StrategyState } from '../../federation/strategy/index.ts';
import { type Commit, modelHash, type PreparedCandidate, roundCommit } from '../../src/versions/index.ts';

/** The round parameters of every fixture commit. */
export const PARAMS = new TextEncoder().encode('fedadam;b=4');
/** The genesis model. */
export const W0 = new Float32Array([1, -0.5, 0.25, 3]);
/** The aggregate digest of every fixture round commit. */
export const AGG = new Uint8Array(32).fill(0xab);

/** A FedAdam state at `step` (m and v mark the step in different places). */
export function state(step: number): StrategyState {
  return {
    strategy: 'fedadam',
    step,
    m: new Float32Array([step, 0, 0, 0]),
    v: new Float32Array([0, step, 0, 0]),
  };
}

/** The candidate after `parent`: every weight plus `delta`, strategy step = round. */
export function candidate(
  parent: Commit,
  parentModel: Float32Array,
  round: number,
  delta: number,
): PreparedCandidate {
  const parameters = parentModel.map((x) => x + delta);
  const commit = roundCommit(parent, {
    round,
    aggregateDigest: AGG,
    modelHash: modelHash(parameters),
    params: PARAMS,
  });
  return { commit, parameters, strategyState: state(round) };
}
