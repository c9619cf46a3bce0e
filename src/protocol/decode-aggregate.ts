import { clampLaneSums, type LaneKeyset, laneLayout, roundSlots } from '../../crypto/lanes/index.ts';
import { dequantizeSum } from '../../federation/index.ts';
import { BlockRejectedError } from '../errors/index.ts';
import type { Aggregate } from './aggregate.ts';
import { AggregateMacCheck, dataSlotsOfBlock, type RoundMac } from './aggregate-mac.ts';
import { runSteps, runStepsYielding, type Steps } from './cooperative-steps.ts';
import { type CryptoTimingObserver, reportCkks } from './crypto-observer.ts';
import { updateLayout } from './update-layout.ts';

/** Decoded aggregate: integer lane sums and their float value. */
export interface DecodedAggregate {
  /** Σ over contributors of dequantized updates (float32), length totalParams. */
  readonly sum: Float32Array;
  /** Exact integer lane sums Σ_k ℓ_k per parameter (what CKKS added, clamped to the honest range). */
  readonly laneSums: Float64Array;
  readonly contributors: number;
  readonly totalWeight: number;
  /**
   * Slots and lanes a contribution pushed outside the honest range (not an integer, negative, a
   * lane above K · (2^bits − 1)): clamped, not refused (`clampLaneSums`). 0 for honest updates.
   */
  readonly clamped: number;
}

/**
 * Decrypts an aggregate of the round `mac` is bound to with the federation's keyset, checks its
 * MAC against the listed contributors (`MAC_MISMATCH`: not their exact sum; see
 * {@link AggregateMacCheck}), unpacks the lanes, clamping any a contribution pushed outside the
 * honest range, and dequantizes the sum: Σ_k value(ℓ_k) = −K·clip + S·Δ. Dividing by the weight
 * is the strategy's job. `timings` reports each block's decryption (`decrypt`).
 */
export function decodeAggregate(
  keyset: LaneKeyset,
  aggregate: Aggregate,
  mac: RoundMac,
  timings?: CryptoTimingObserver,
): DecodedAggregate {
  return runSteps(aggregateSteps(keyset, aggregate, mac, timings));
}

/**
 * {@link decodeAggregate}, sharing the event loop: it yields every `STEP_SLICE_MS` of work (a
 * 10M-parameter aggregate takes seconds to decrypt), so the site's heartbeats and connection stay
 * live meanwhile. Same result, same errors.
 */
export function decodeAggregateYielding(
  keyset: LaneKeyset,
  aggregate: Aggregate,
  mac: RoundMac,
  timings?: CryptoTimingObserver,
): Promise<DecodedAggregate> {
  return runStepsYielding(aggregateSteps(keyset, aggregate, mac, timings));
}

/** {@link decodeAggregate} as steps: the listed sites checked, then {@link decodeLanes}. */
function* aggregateSteps(
  keyset: LaneKeyset,
  aggregate: Aggregate,
  mac: RoundMac,
  timings?: CryptoTimingObserver,
): Steps<DecodedAggregate> {
  const sites = aggregate.sites.map((c) => c.site);
  if (new Set(sites).size !== sites.length) {
    throw new BlockRejectedError('INTEGRITY_MISMATCH', 'the aggregate lists a site twice');
  }
  return yield* decodeLanes(keyset, aggregate, { mac, sites }, timings);
}

/**
 * Decodes one site's own update (a `plain`-mode payload the coordinator reads back for a robust
 * rule): the same unpacking with clamps as {@link decodeAggregate}, without the MAC, whose key
 * only sites hold; the site's signature on the update is what vouches for it.
 */
export function decodeUpdate(keyset: LaneKeyset, update: Aggregate): DecodedAggregate {
  if (update.contributors !== 1) {
    throw new BlockRejectedError('BAD_HEADER', `an update of ${update.contributors} contributors is a sum`);
  }
  return runSteps(decodeLanes(keyset, update, null));
}

/** The decoding as steps: one per decrypted block. */
function* decodeLanes(
  keyset: LaneKeyset,
  aggregate: Aggregate,
  verify: { readonly mac: RoundMac; readonly sites: readonly string[] } | null,
  timings?: CryptoTimingObserver,
): Steps<DecodedAggregate> {
  const e = aggregate.encoding;
  const ctx = keyset.ctx;
  if (e.slots !== ctx.slots || !e.ckksParamsId.every((b, i) => b === ctx.paramsId[i])) {
    throw new BlockRejectedError(
      'CKKS_PARAMS_MISMATCH',
      'aggregate was encrypted under other CKKS parameters',
    );
  }
  const layout = laneLayout(e.bits, e.maxContributors, ctx.params.exactBits);
  if (layout.laneBits !== e.laneBits || layout.lanesPerSlot !== e.lanesPerSlot) {
    throw new BlockRejectedError(
      'ENCODING_MISMATCH',
      'aggregate lane layout differs from the CKKS parameters',
    );
  }
  const k = aggregate.contributors;
  if (!Number.isInteger(k) || k < 1 || k > layout.maxContributors || aggregate.sites.length !== k) {
    throw new BlockRejectedError(
      'LANE_OVERFLOW',
      `${k} contributors (${aggregate.sites.length} listed) exceed the lane headroom of ${layout.maxContributors}`,
    );
  }
  const geometry = updateLayout(aggregate.totalParams, e);
  if (aggregate.ciphertexts.length !== geometry.blocks) {
    throw new BlockRejectedError(
      'BLOCK_COUNT_MISMATCH',
      `aggregate has ${aggregate.ciphertexts.length} blocks, ${aggregate.totalParams} parameters need ${geometry.blocks}`,
    );
  }
  const laneSums = new Float64Array(aggregate.totalParams);
  const integers = new Float64Array(ctx.slots);
  const check = verify === null ? null : new AggregateMacCheck(verify.mac, geometry);
  let clamped = 0;
  for (const [b, ct] of aggregate.ciphertexts.entries()) {
    const started = timings === undefined ? 0 : performance.now();
    const slots = keyset.decrypt(ct, b);
    reportCkks(timings, 'decrypt', started);
    const { count } = dataSlotsOfBlock(geometry, b);
    clamped += roundSlots(slots.subarray(0, count), integers);
    if (check !== null) {
      // The limbs are integers of their own (never clamped): round them too for the check.
      roundSlots(slots.subarray(count), integers.subarray(count));
      check.block(b, integers);
    }
    const offset = b * geometry.lanesPerBlock;
    const params = Math.min(count * e.lanesPerSlot, aggregate.totalParams - offset);
    if (params > 0) clamped += clampLaneSums(integers, params, layout, k, laneSums, offset);
    yield;
  }
  check?.verify(verify!.sites);
  return {
    sum: dequantizeSum(laneSums, k, e.bits as 1 | 2 | 4 | 8, e.clip),
    laneSums,
    contributors: k,
    totalWeight: aggregate.totalWeight,
    clamped,
  };
}
