import { MAC_TAG_BITS } from '../../crypto/mac/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { Encoding } from './messages.ts';

/** What of an encoding the layout of an update depends on. */
export type LayoutEncoding = Pick<Encoding, 'laneBits' | 'lanesPerSlot' | 'maxContributors' | 'slots'>;

/**
 * Where an update's values sit in its slots. The `totalParams` values (quantized parameters and
 * any integer lanes appended to them) fill `dataSlots` slots, `lanesPerSlot` lanes each; then the
 * aggregate MAC's tag takes `macSlots` whole slots, one limb of `limbBits` bits each (a limb is a
 * slot's integer value, not lanes: a sum of K limbs stays below K · 2^limbBits ≤ 2^(lanesPerSlot ·
 * laneBits), as exact as any slot). Blocks cut the slots in order, `slots` per block.
 *
 * In the wire geometry (a block's `paramOffset`/`paramCount`) every slot counts as
 * `lanesPerSlot` lanes: an update covers `lanes` = `totalSlots · lanesPerSlot` of them.
 */
export interface UpdateLayout {
  readonly totalParams: number;
  readonly dataSlots: number;
  readonly limbBits: number;
  readonly macSlots: number;
  readonly totalSlots: number;
  readonly lanes: number;
  readonly blocks: number;
  /** Slots per block. */
  readonly slotsPerBlock: number;
  /** Lanes per block in the wire geometry: `slots · lanesPerSlot`. */
  readonly lanesPerBlock: number;
}

/** Number of bits of `n` (n ≥ 1). */
function bitLength(n: number): number {
  return Math.floor(Math.log2(n)) + 1;
}

/** The layout of an update of `totalParams` values under `encoding`; `INVALID_ARGUMENT` when none fits. */
export function updateLayout(totalParams: number, encoding: LayoutEncoding): UpdateLayout {
  if (!Number.isSafeInteger(totalParams) || totalParams < 0) {
    throw new InvalidArgumentError(`totalParams ${totalParams} must be a safe integer ≥ 0`, {
      details: { name: 'totalParams' },
    });
  }
  const { laneBits, lanesPerSlot, maxContributors, slots } = encoding;
  for (const [name, v] of [
    ['laneBits', laneBits],
    ['lanesPerSlot', lanesPerSlot],
    ['maxContributors', maxContributors],
    ['slots', slots],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1) {
      throw new InvalidArgumentError(`encoding.${name} ${v} must be a safe integer ≥ 1`, {
        details: { name: `encoding.${name}` },
      });
    }
  }
  const limbBits = lanesPerSlot * laneBits - bitLength(maxContributors);
  if (limbBits < 1) {
    throw new InvalidArgumentError(
      `a slot of ${lanesPerSlot} × ${laneBits} bits leaves ${limbBits} bits per MAC limb for ${maxContributors} contributors`,
      { details: { name: 'encoding' } },
    );
  }
  const dataSlots = Math.ceil(totalParams / lanesPerSlot);
  const macSlots = Math.ceil(MAC_TAG_BITS / limbBits);
  const totalSlots = dataSlots + macSlots;
  return Object.freeze({
    totalParams,
    dataSlots,
    limbBits,
    macSlots,
    totalSlots,
    lanes: totalSlots * lanesPerSlot,
    blocks: Math.ceil(totalSlots / slots),
    slotsPerBlock: slots,
    lanesPerBlock: slots * lanesPerSlot,
  });
}

/** Lanes an update of `totalParams` values covers in the wire geometry (see {@link updateLayout}). */
export function encodedLaneCount(totalParams: number, encoding: LayoutEncoding): number {
  return updateLayout(totalParams, encoding).lanes;
}
