import type { ModelSpec } from '../../federation/index.ts';
import { modelLayout } from '../../federation/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { evaluationLaneCount, RMS_BUCKETS } from '../protocol/index.ts';
import { type ServicePrivacy, servicePrivacy } from './privacy-plan.ts';

/**
 * How a round's updates are laid out: the model's parameters, then the RMS histogram (one-hot in
 * the bucket of the site's update RMS, `rms-lanes.ts`: the sites learn the contributors' median
 * RMS for the next clip, and no vote carries a site's own), then (with federated evaluation) the
 * evaluation lanes of a `classes`-class model. Coordinator and sites compute it from the same
 * configuration, and RoundOpen pins the total, so a site configured otherwise skips the round.
 */
export interface UpdatePlan {
  /** Parameters of the model. */
  readonly parameters: number;
  /**
   * Lanes the parameters take: one each, or with differential privacy the digits of each
   * parameter's noised integer ({@link ServicePrivacy}).
   */
  readonly modelLanes: number;
  /** Lanes every training update carries: the model's, then the {@link RMS_BUCKETS} histogram lanes. */
  readonly requiredLanes: number;
  /** The federation's privacy plan, or null without `privacy`. */
  readonly privacy: ServicePrivacy | null;
  /** Classes evaluated, or null without federated evaluation. */
  readonly classes: number | null;
  /** Evaluation lanes after the parameters (0 without federated evaluation). */
  readonly evaluationLanes: number;
  /** What RoundOpen pins as `totalParams`. */
  readonly totalParams: number;
}

/**
 * Whether rounds carry federated evaluation: `learning.evaluation`, by default on for a federation
 * with a data contract (its sites have validation rows) and off for the bundled-MNIST split.
 */
export function federatedEvaluation(config: CohortConfig): boolean {
  const chosen = config.learning.evaluation;
  if (chosen !== undefined) return chosen === 'federated';
  return config.data !== undefined;
}

/** The update layout of a round at `bits` per lane (see {@link UpdatePlan}). */
export function updatePlan(config: CohortConfig, spec: ModelSpec, bits: number): UpdatePlan {
  const layout = modelLayout(spec);
  const parameters = layout.parameterCount;
  const privacy = servicePrivacy(config, spec);
  const modelLanes = privacy === null ? parameters : parameters * privacy.digits;
  const requiredLanes = modelLanes + RMS_BUCKETS;
  const base = { parameters, modelLanes, requiredLanes, privacy };
  if (!federatedEvaluation(config)) {
    return { ...base, classes: null, evaluationLanes: 0, totalParams: requiredLanes };
  }
  const classes = layout.layers[layout.layers.length - 1]!.outputs;
  const evaluationLanes = evaluationLaneCount(classes, bits);
  return { ...base, classes, evaluationLanes, totalParams: requiredLanes + evaluationLanes };
}
