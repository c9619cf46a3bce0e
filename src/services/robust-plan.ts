import { sha256 } from '../../crypto/digest/index.ts';
import type { LaneKeyset } from '../../crypto/lanes/index.ts';
import { type RobustRule, robustAggregate } from '../../federation/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { decodeUpdate, type VerifiedUpdate } from '../protocol/index.ts';

/**
 * The federation's robust rule: `federation.aggregation` in `plain` mode (the config refuses it in
 * `he` mode), else null (FedAvg of the tree's sum).
 */
export function serviceRobustRule(config: CohortConfig): RobustRule | null {
  const rule = config.federation.aggregation;
  // The frozen config's object is the rule: every RobustRule field is readonly.
  return rule === undefined || config.federation.mode !== 'plain' ? null : (rule as RobustRule);
}

/** Name of a round's aggregate update in the aggregates store (round numbers are never reused). */
export function robustDeltaObjectName(round: number): string {
  return `round-${round}-robust`;
}

/** The stored form of an aggregate update Δ̄: float32 little-endian, parameter by parameter. */
export function encodeRobustDelta(delta: Float32Array): Uint8Array {
  const out = new Uint8Array(delta.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < delta.length; i++) view.setFloat32(4 * i, delta[i]!, true);
  return out;
}

/**
 * Inverse of {@link encodeRobustDelta} for a model of `parameters` parameters: `INVALID_ARGUMENT`
 * for another length or a value that is not finite.
 */
export function decodeRobustDelta(bytes: Uint8Array, parameters: number): Float32Array {
  if (bytes.length !== parameters * 4) {
    throw new InvalidArgumentError(
      `aggregate update of ${bytes.length} bytes, the model has ${parameters} parameters`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(parameters);
  for (let i = 0; i < parameters; i++) {
    const v = view.getFloat32(4 * i, true);
    if (!Number.isFinite(v)) throw new InvalidArgumentError(`aggregate update parameter ${i} is ${v}`);
    out[i] = v;
  }
  return out;
}

/**
 * One site's update Δ_k as the rule sees it: its plain payloads decoded on their own (lanes
 * outside one site's range clamped, `decodeUpdate`), dequantized, the first `parameters` values
 * (evaluation lanes after them are not part of the model). Its site's signature vouches for it.
 */
export function plainUpdateDelta(
  keyset: LaneKeyset,
  update: VerifiedUpdate,
  parameters: number,
): Float32Array {
  if (keyset.ctx.mode !== 'plain')
    throw new InvalidArgumentError('only plain updates can be read one by one');
  const decoded = decodeUpdate(keyset, {
    encoding: update.encoding,
    totalParams: update.totalParams,
    sites: update.sites,
    contributors: 1,
    totalWeight: update.exampleWeight,
    ciphertexts: update.ciphertexts,
  });
  if (decoded.sum.length < parameters) {
    throw new InvalidArgumentError(
      `update of ${update.signer} has ${decoded.sum.length} values, the model ${parameters}`,
    );
  }
  return decoded.sum.slice(0, parameters);
}

/** What {@link applyRobustRule} computed. */
export interface RobustRoundResult {
  /** Δ̄, float32. */
  readonly delta: Float32Array;
  /** {@link encodeRobustDelta} of it, and its SHA-256 (what the commit's params record). */
  readonly bytes: Uint8Array;
  readonly digest: Uint8Array;
  /** Sites whose updates the rule kept, sorted. */
  readonly selected: readonly string[];
  /** Updates the norm bound scaled down. */
  readonly clipped: number;
}

/**
 * Applies `rule` to the round's updates, taken in site-id order so the result does not depend on
 * the order they arrived in (the coordinator and an auditor compute the same bytes).
 */
export function applyRobustRule(
  updates: readonly { readonly site: string; readonly delta: Float32Array }[],
  rule: RobustRule,
): RobustRoundResult {
  const sorted = [...updates].sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.site === sorted[i - 1]!.site) {
      throw new InvalidArgumentError(`two updates of ${sorted[i]!.site}`);
    }
  }
  const result = robustAggregate(
    sorted.map((u) => u.delta),
    rule,
  );
  const bytes = encodeRobustDelta(result.mean);
  return {
    delta: result.mean,
    bytes,
    digest: sha256(bytes),
    selected: result.selected.map((i) => sorted[i]!.site),
    clipped: result.clippedCount,
  };
}
