import { type LaneKeyset, laneLayout, unpackLaneSums } from '../../crypto/lanes/index.ts';
import { dequantizeSum } from '../../federation/index.ts';
import { BlockRejectedError } from '../errors/index.ts';
import type { Aggregate } from './aggregate.ts';
import { type CryptoTimingObserver, reportCkks } from './crypto-observer.ts';
import { checkIntegrityLanes, encodedLaneCount } from './integrity-lanes.ts';
import type { RoundContext } from './round-context.ts';

/** Decoded aggregate: integer lane sums and their float value. */
export interface DecodedAggregate {
  /** Σ over contributors of dequantized updates (float32), length totalParams. */
  readonly sum: Float32Array;
  /** Exact integer lane sums Σ_k ℓ_k per parameter (what CKKS added). */
  readonly laneSums: Float64Array;
  readonly contributors: number;
  readonly totalWeight: number;
}

/**
 * Decrypts an aggregate of `context`'s round with the federation's CKKS keyset, unpacks the lanes
 * (refusing any lane beyond K · (2^bits − 1): `LANE_OVERFLOW`), checks the integrity lanes (exactly
 * K contributions of this round: `INTEGRITY_MISMATCH`), and dequantizes the sum:
 * Σ_k value(ℓ_k) = −K·clip + S·Δ. Dividing by the weight is the strategy's job. `timings`
 * reports each block's decryption (`decrypt`).
 */
export function decodeAggregate(
  keyset: LaneKeyset,
  aggregate: Aggregate,
  context: Pick<RoundContext, 'federation' | 'round'>,
  participants: readonly string[] = [],
  timings?: CryptoTimingObserver,
): DecodedAggregate {
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
  // With the round's participants (RoundOpen's assignments, in order) each has its presence lane;
  // without, one lane counts the contributions.
  const presence = participants.length === 0 ? [aggregate.contributors] : participants.map(() => 0);
  if (participants.length > 0) {
    const lane = new Map(participants.map((site, i) => [site, i]));
    for (const c of aggregate.sites) {
      const i = lane.get(c.site);
      if (i === undefined) {
        throw new BlockRejectedError(
          'INTEGRITY_MISMATCH',
          `the aggregate lists ${JSON.stringify(c.site)}, not a participant of round ${context.round}`,
        );
      }
      presence[i]!++;
    }
  }
  const k = aggregate.contributors;
  if (!Number.isInteger(k) || k < 1 || k > layout.maxContributors) {
    throw new BlockRejectedError(
      'LANE_OVERFLOW',
      `${k} contributors exceed the lane headroom of ${layout.maxContributors}`,
    );
  }
  const lanes = encodedLaneCount(aggregate.totalParams, e.bits, presence.length);
  const expectedBlocks = Math.ceil(lanes / e.paramsPerBlock);
  if (aggregate.ciphertexts.length !== expectedBlocks) {
    throw new BlockRejectedError(
      'BLOCK_COUNT_MISMATCH',
      `aggregate has ${aggregate.ciphertexts.length} blocks, ${aggregate.totalParams} parameters need ${expectedBlocks}`,
    );
  }
  const all = new Float64Array(lanes);
  aggregate.ciphertexts.forEach((ct, b) => {
    const offset = b * e.paramsPerBlock;
    const count = Math.min(e.paramsPerBlock, lanes - offset);
    try {
      // Bounded by the lanes' headroom here; by the listed contributors below, once the integrity
      // lanes said how many updates the sum really holds (the more telling refusal).
      const started = timings === undefined ? 0 : performance.now();
      const slots = keyset.decrypt(ct);
      reportCkks(timings, 'decrypt', started);
      unpackLaneSums(slots, count, layout, layout.maxContributors, all, offset);
    } catch (err) {
      if (err instanceof BlockRejectedError) {
        throw new BlockRejectedError(err.reason, `block ${b}: ${err.message}`, {
          cause: err,
          details: err.details,
        });
      }
      throw err;
    }
  });
  checkIntegrityLanes(all.subarray(aggregate.totalParams), e.bits, presence, context, (lane) =>
    participants.length === 0 ? 'any site' : JSON.stringify(participants[lane]),
  );
  const laneSums = all.subarray(0, aggregate.totalParams);
  const honestMax = aggregate.contributors * (2 ** e.bits - 1);
  const over = laneSums.findIndex((v) => v > honestMax);
  if (over >= 0) {
    throw new BlockRejectedError(
      'LANE_OVERFLOW',
      `block ${Math.floor(over / e.paramsPerBlock)}: parameter ${over} lane sum ${laneSums[over]} exceeds ${aggregate.contributors} × ${2 ** e.bits - 1} = ${honestMax}`,
    );
  }
  return {
    sum: dequantizeSum(laneSums, aggregate.contributors, e.bits as 1 | 2 | 4 | 8, e.clip),
    laneSums,
    contributors: aggregate.contributors,
    totalWeight: aggregate.totalWeight,
  };
}
