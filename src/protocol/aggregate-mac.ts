import {
  type AggregateMacKey,
  MAC_PRIME,
  type MacNonce,
  macAccumulate,
  macSiteOffset,
  macWeights,
} from '../../crypto/mac/index.ts';
import { BlockRejectedError, InvalidArgumentError } from '../errors/index.ts';
import type { UpdateLayout } from './update-layout.ts';

/**
 * The aggregate MAC of a round (docs/security.md, "Verifiable aggregation"). Every site's update
 * carries, in the slots after its data, the tag t_k = Σ_s r_s · S_{k,s} + ρ_k mod p over the
 * integer values S_{k,s} of every other slot of its blocks (data and padding), with secret weights r and a secret per-site offset ρ_k that only sites
 * can compute (`crypto/mac`, keyed by a key derived from the federation data key and bound to the
 * round and attempt). Slot sums are exact and the tag is linear, so an aggregate of exactly the
 * listed contributions L satisfies T ≡ Σ_s r_s · S_s + Σ_{k ∈ L} ρ_k (mod p), where T is the sum
 * of the tags read from the aggregate's limbs. A party without the key (an aggregator, the
 * coordinator, the network) who adds a plaintext, leaves a listed contribution out, adds one
 * twice, puts another in its place or takes one from another round or attempt satisfies the
 * equation with probability at most 1/p = 2^−61 per aggregate (see docs/security.md for the
 * argument).
 */
export interface RoundMac {
  readonly key: AggregateMacKey;
  readonly nonce: MacNonce;
}

/** Global slot indices [first, first + count) of the data slots in block `block`. */
export function dataSlotsOfBlock(layout: UpdateLayout, block: number): { first: number; count: number } {
  const first = block * layout.slotsPerBlock;
  const count = Math.max(0, Math.min(layout.dataSlots, first + layout.slotsPerBlock) - first);
  return { first, count };
}

/** Positions (within block `block`) and limb indices of the MAC slots that block holds. */
function limbSlotsOfBlock(layout: UpdateLayout, block: number): { local: number; limb: number }[] {
  const out: { local: number; limb: number }[] = [];
  const first = block * layout.slotsPerBlock;
  for (let limb = 0; limb < layout.macSlots; limb++) {
    const global = layout.dataSlots + limb;
    if (global >= first && global < first + layout.slotsPerBlock) out.push({ local: global - first, limb });
  }
  return out;
}

/**
 * `acc` plus the weighted sum of every slot of block `block` but the tag's limbs (integers in
 * `slots`) mod p: the data slots and the padding after them alike, so nothing anywhere in an
 * update can change without changing the sum. A tag's linear part is the sum of these over every
 * block, in any order or split.
 */
export function macBlockSum(
  mac: RoundMac,
  layout: UpdateLayout,
  block: number,
  slots: Float64Array,
  acc = 0n,
): bigint {
  const n = layout.slotsPerBlock;
  const limbs = limbSlotsOfBlock(layout, block);
  let values: Float64Array = slots.subarray(0, n);
  if (limbs.length > 0) {
    values = values.slice();
    for (const { local } of limbs) values[local] = 0;
  }
  return macAccumulate(macWeights(mac.key, mac.nonce, block * n, n), values, acc);
}

/** Site `site`'s tag from the linear part `acc` of its update: (acc + ρ_site) mod p. */
export function macTag(mac: RoundMac, site: string, acc: bigint): bigint {
  return (acc + macSiteOffset(mac.key, mac.nonce, site)) % MAC_PRIME;
}

/** Whether block `block` holds any of the tag's limbs. */
export function holdsTagLimbs(layout: UpdateLayout, block: number): boolean {
  return limbSlotsOfBlock(layout, block).length > 0;
}

/** Writes the limbs of `tag` that block `block` holds into its slot vector `slots`. */
export function writeTagLimbs(layout: UpdateLayout, block: number, slots: Float64Array, tag: bigint): void {
  const base = 2n ** BigInt(layout.limbBits);
  // Limb j holds bits [j · limbBits, (j + 1) · limbBits) of the tag.
  const limbs: number[] = [];
  let rest = tag;
  for (let j = 0; j < layout.macSlots; j++) {
    limbs.push(Number(rest % base));
    rest /= base;
  }
  for (const { local, limb } of limbSlotsOfBlock(layout, block)) slots[local] = limbs[limb]!;
}

/**
 * A site's tag over its update, block by block: feed each block's slot vector (its data slots
 * already packed) in order to {@link UpdateTagger.block}, which accumulates the data slots and
 * writes the tag's limbs into the block(s) holding them. Blocks must come in index order: the tag
 * is complete once every data slot was seen, and the limbs follow the data.
 */
export class UpdateTagger {
  readonly #mac: RoundMac;
  readonly #layout: UpdateLayout;
  readonly #site: string;
  #acc = 0n;
  #next = 0;

  constructor(mac: RoundMac, layout: UpdateLayout, site: string) {
    this.#mac = mac;
    this.#layout = layout;
    this.#site = site;
  }

  /** Accumulates block `index`'s data slots of `slots` and writes any limbs it holds into `slots`. */
  block(index: number, slots: Float64Array): void {
    if (index !== this.#next) {
      throw new InvalidArgumentError(`block ${index} tagged out of order (expected ${this.#next})`);
    }
    this.#next++;
    this.#acc = macBlockSum(this.#mac, this.#layout, index, slots, this.#acc);
    if (holdsTagLimbs(this.#layout, index)) {
      writeTagLimbs(this.#layout, index, slots, macTag(this.#mac, this.#site, this.#acc));
    }
  }
}

/**
 * A decrypting site's check of an aggregate's MAC, block by block: feed each block's decrypted
 * slots rounded to integers, in index order, then {@link AggregateMacCheck.verify} with the
 * listed contributors. Throws `MAC_MISMATCH` when the equation does not hold.
 */
export class AggregateMacCheck {
  readonly #mac: RoundMac;
  readonly #layout: UpdateLayout;
  readonly #limbs: number[];
  #acc = 0n;
  #next = 0;

  constructor(mac: RoundMac, layout: UpdateLayout) {
    this.#mac = mac;
    this.#layout = layout;
    this.#limbs = new Array<number>(layout.macSlots).fill(0);
  }

  /** Accumulates block `index`'s data slots and reads its limbs; `integers` are the rounded slot values. */
  block(index: number, integers: Float64Array): void {
    if (index !== this.#next) {
      throw new InvalidArgumentError(`block ${index} checked out of order (expected ${this.#next})`);
    }
    this.#next++;
    this.#acc = macBlockSum(this.#mac, this.#layout, index, integers, this.#acc);
    for (const { local, limb } of limbSlotsOfBlock(this.#layout, index)) this.#limbs[limb] = integers[local]!;
  }

  /** Throws `MAC_MISMATCH` unless the aggregate is the sum of exactly `contributors`' updates of this round. */
  verify(contributors: readonly string[]): void {
    if (this.#next !== this.#layout.blocks) {
      throw new InvalidArgumentError(`MAC checked over ${this.#next} of ${this.#layout.blocks} blocks`);
    }
    let total = 0n;
    const base = 2n ** BigInt(this.#layout.limbBits);
    for (let j = this.#layout.macSlots - 1; j >= 0; j--) total = total * base + BigInt(this.#limbs[j]!);
    let expected = this.#acc;
    for (const site of contributors) expected += macSiteOffset(this.#mac.key, this.#mac.nonce, site);
    const got = ((total % MAC_PRIME) + MAC_PRIME) % MAC_PRIME;
    if (got !== expected % MAC_PRIME) {
      throw new BlockRejectedError(
        'MAC_MISMATCH',
        `the aggregate's MAC does not hold for its ${contributors.length} listed contribution(s) of round ${this.#mac.nonce.round}: it is not their exact sum (something was added, left out, repeated or swapped), or a contributor's tag is wrong`,
      );
    }
  }
}
