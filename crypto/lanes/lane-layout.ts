import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * How quantized integers share a CKKS slot. Each parameter's unsigned level ℓ ∈ [0, 2^bits − 1]
 * gets a lane of `laneBits` bits, wide enough that the sum over `maxContributors` sites cannot
 * carry into the next lane; `lanesPerSlot` lanes fit in the `exactBits` a slot decrypts exactly.
 *
 * Invariants: laneBits = bitLength(maxContributors · (2^bits − 1)),
 * lanesPerSlot = ⌊exactBits / laneBits⌋ ≥ 1, lanesPerSlot · laneBits ≤ exactBits.
 */
export interface LaneLayout {
  readonly bits: number;
  readonly maxContributors: number;
  readonly exactBits: number;
  readonly laneBits: number;
  readonly lanesPerSlot: number;
  /** Largest honest lane sum: maxContributors · (2^bits − 1). */
  readonly maxLaneSum: number;
}

/** Computes the lane layout; throws `INVALID_ARGUMENT` naming the field when nothing fits. */
export function laneLayout(bits: number, maxContributors: number, exactBits: number): LaneLayout {
  if (!Number.isInteger(bits) || bits < 1 || bits > 16) {
    throw new InvalidArgumentError(`bits ${bits} must be an integer in [1, 16]`);
  }
  if (!Number.isInteger(maxContributors) || maxContributors < 1 || maxContributors > 65_535) {
    throw new InvalidArgumentError(`maxContributors ${maxContributors} must be an integer in [1, 65535]`);
  }
  if (!Number.isInteger(exactBits) || exactBits < 1 || exactBits > 52) {
    throw new InvalidArgumentError(`exactBits ${exactBits} must be an integer in [1, 52]`);
  }
  const maxLaneSum = maxContributors * (2 ** bits - 1);
  const laneBits = Math.floor(Math.log2(maxLaneSum)) + 1;
  const lanesPerSlot = Math.floor(exactBits / laneBits);
  if (lanesPerSlot < 1) {
    throw new InvalidArgumentError(
      `a lane needs ${laneBits} bits for ${maxContributors} contributors at ${bits} bits, a slot holds ${exactBits}`,
    );
  }
  return Object.freeze({ bits, maxContributors, exactBits, laneBits, lanesPerSlot, maxLaneSum });
}
