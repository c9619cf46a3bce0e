import type { ModelSpec } from '../../federation/index.ts';
import type { CohortConfig } from '../config/index.ts';
import type { ChainCommit } from '../services/federation-log/index.ts';
import { bytesToHex, VersionError } from '../versions/index.ts';
import type { FederationTimeline } from './federation-timeline.ts';
import { readStoredModel } from './stored-model.ts';

/** Formats a commit's model can be exported as (`versions export --format`). */
export const EXPORT_FORMATS = ['safetensors'] as const;

/**
 * The safetensors `__metadata__` of an exported commit: `format: "pt"` (PyTorch loaders expect
 * it), `cohort_commit` (hash, hex), `cohort_height`, `cohort_round`, `cohort_federation`,
 * `cohort_model` (the spec's name), `cohort_input` (JSON of the per-sample input shape, e.g.
 * `[1,28,28]`) and `cohort_layers` (JSON of the spec's layer list, e.g.
 * `[{"type":"dense","units":200},{"type":"relu"},…]`: with `cohort_input`, enough to rebuild the
 * `nn.Sequential` the tensor names index).
 */
export function exportMetadata(
  config: CohortConfig,
  spec: ModelSpec,
  c: ChainCommit,
): Record<string, string> {
  return {
    format: 'pt',
    cohort_commit: bytesToHex(c.commit.hash),
    cohort_height: String(c.commit.height),
    cohort_round: String(c.commit.round),
    cohort_federation: config.federation.id,
    cohort_model: spec.name,
    cohort_input: JSON.stringify(spec.input),
    cohort_layers: JSON.stringify(spec.layers),
  };
}

/** Why a store lacks a commit's model, and what to do instead. */
export function missingModelMessage(dir: string, c: ChainCommit, timeline: FederationTimeline): string {
  return (
    `the model store ${dir} does not hold the model of commit ${bytesToHex(c.commit.hash)} (@${c.commit.height}, round ${c.commit.round}): ` +
    `the store was pruned (history.keepModels) or is shallow (the site joined from a snapshot after it); ` +
    `try another site's store, or a newer commit (the head is @${timeline.head.commit.height})`
  );
}

/**
 * The model of `c` from the store in `dir`, checked against the log's model hash.
 *
 * @throws VersionError `MODEL_MISSING` ({@link missingModelMessage}), `STORE_CORRUPT`, `STORE_IO`.
 */
export function requireStoredModel(dir: string, c: ChainCommit, timeline: FederationTimeline): Float32Array {
  const model = readStoredModel(dir, c.commit);
  if (model === null) {
    throw new VersionError('MODEL_MISSING', missingModelMessage(dir, c, timeline), {
      details: { path: dir, commit: bytesToHex(c.commit.hash) },
    });
  }
  return model;
}
