import { createCipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * The MAC's field: the Mersenne prime p = 2^61 − 1. Tags and weights are residues mod p; a slot
 * value (an integer below 2^53) is reduced mod p before it is weighted.
 */
export const MAC_PRIME = (1n << 61n) - 1n;

/** Bits of a tag: every residue mod {@link MAC_PRIME} fits in 61 bits. */
export const MAC_TAG_BITS = 61;

/** Bytes of an aggregate-MAC key (HMAC-SHA256 and AES-256 keys are derived from it). */
export const MAC_KEY_BYTES = 32;

const MASK61 = (1n << 61n) - 1n;
const KEY_INFO = 'cohort/v1/aggregate-mac';

/**
 * The secret of the aggregate MAC: a 32-byte key only the federation's sites hold, derived from
 * the federation data key (HKDF-SHA256, info `cohort/v1/aggregate-mac ‖ 0 ‖ federation`), so no
 * new key has to be distributed, and no aggregator, coordinator or auditor ever holds it.
 * {@link AggregateMacKey.delete} wipes it.
 */
export class AggregateMacKey {
  readonly #key: Uint8Array;
  #deleted = false;

  private constructor(key: Uint8Array) {
    this.#key = key;
  }

  /** The federation's MAC key from its data key (32 bytes). */
  static fromDataKey(dataKey: Uint8Array, federation: string): AggregateMacKey {
    if (!(dataKey instanceof Uint8Array) || dataKey.length !== 32) {
      throw new InvalidArgumentError('dataKey must be a 32-byte federation data key', {
        details: { name: 'dataKey' },
      });
    }
    assertFederation(federation);
    const info = Buffer.concat([Buffer.from(`${KEY_INFO}\0`), Buffer.from(federation, 'utf8')]);
    return new AggregateMacKey(new Uint8Array(hkdfSync('sha256', dataKey, new Uint8Array(0), info, 32)));
  }

  /** A fresh random key: for tools and tests that sum updates outside a federation. */
  static random(): AggregateMacKey {
    return new AggregateMacKey(new Uint8Array(randomBytes(MAC_KEY_BYTES)));
  }

  /** A key from its raw bytes (copied). */
  static fromBytes(key: Uint8Array): AggregateMacKey {
    if (!(key instanceof Uint8Array) || key.length !== MAC_KEY_BYTES) {
      throw new InvalidArgumentError(`key must be ${MAC_KEY_BYTES} bytes`, { details: { name: 'key' } });
    }
    return new AggregateMacKey(new Uint8Array(key));
  }

  /** @internal The raw key; throws once deleted. */
  bytes(): Uint8Array {
    if (this.#deleted) throw new InvalidArgumentError('the aggregate MAC key was deleted');
    return this.#key;
  }

  /** Wipes the key. */
  delete(): void {
    this.#key.fill(0);
    this.#deleted = true;
  }
}

function assertFederation(federation: unknown): asserts federation is string {
  if (typeof federation !== 'string' || federation.length === 0 || federation.length > 128) {
    throw new InvalidArgumentError('federation must be a non-empty string of at most 128 characters', {
      details: { name: 'federation' },
    });
  }
}

/**
 * What a round's MAC is bound to: the federation, the round and its opening attempt. Weights and
 * site offsets of one (federation, round, attempt) are independent of any other's, so a tag from
 * another round or attempt is worth nothing in this one.
 */
export interface MacNonce {
  readonly federation: string;
  readonly round: number;
  readonly attempt: Uint8Array;
}

function nonceBytes(domain: string, nonce: MacNonce): Buffer {
  assertFederation(nonce.federation);
  if (!Number.isSafeInteger(nonce.round) || nonce.round < 0) {
    throw new InvalidArgumentError('nonce.round must be a safe integer ≥ 0', {
      details: { name: 'nonce.round' },
    });
  }
  if (!(nonce.attempt instanceof Uint8Array) || nonce.attempt.length > 64) {
    throw new InvalidArgumentError('nonce.attempt must be at most 64 bytes', {
      details: { name: 'nonce.attempt' },
    });
  }
  const fed = Buffer.from(nonce.federation, 'utf8');
  const out = Buffer.alloc(domain.length + 1 + 4 + fed.length + 8 + 4 + nonce.attempt.length);
  let at = out.write(`${domain}\0`, 0, 'latin1');
  at = out.writeUInt32BE(fed.length, at);
  at += fed.copy(out, at);
  at = out.writeBigUInt64BE(BigInt(nonce.round), at);
  at = out.writeUInt32BE(nonce.attempt.length, at);
  out.set(nonce.attempt, at);
  return out;
}

/**
 * The round's secret weights r_s ∈ [0, 2^61) of `count` consecutive slot positions starting at
 * `first` (a global slot index): AES-256-CTR under a key and IV derived from the MAC key and the
 * nonce, 8 bytes a weight, masked to 61 bits (the value p itself, as likely as any other, acts as
 * 0 mod p: a bias of 2^−61). Any range of positions is computed on its own, so a block's weights
 * need no other block's.
 */
export function macWeights(
  key: AggregateMacKey,
  nonce: MacNonce,
  first: number,
  count: number,
): BigUint64Array {
  if (!Number.isSafeInteger(first) || first < 0 || !Number.isSafeInteger(count) || count < 0) {
    throw new InvalidArgumentError('first and count must be safe integers ≥ 0', {
      details: { name: 'count' },
    });
  }
  // 32 bytes of AES key and the IV's 64-bit prefix, from the MAC key and the nonce.
  const derived = Buffer.from(
    hkdfSync('sha256', key.bytes(), nonceBytes('cohort/v1/mac-weights', nonce), 'cohort/v1/mac-weights', 40),
  );
  // Two weights per 16-byte AES block: start at the block holding weight `first`; the counter is
  // the IV's low 64 bits, which never wrap within a round.
  const startBlock = Math.floor(first / 2);
  const iv = Buffer.alloc(16);
  derived.copy(iv, 0, 32, 40);
  iv.writeBigUInt64BE(BigInt(startBlock), 8);
  const skip = first - startBlock * 2;
  const cipher = createCipheriv('aes-256-ctr', derived.subarray(0, 32), iv);
  const stream = cipher.update(Buffer.alloc((count + skip) * 8));
  cipher.final();
  derived.fill(0);
  const out = new BigUint64Array(count);
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  for (let i = 0; i < count; i++) out[i] = view.getBigUint64((i + skip) * 8, false) & MASK61;
  stream.fill(0);
  return out;
}

/**
 * Site `site`'s secret offset ρ ∈ [0, p) in the round: HMAC-SHA256 of the nonce and the site id
 * under the MAC key. Each contribution's tag carries its site's offset, so an aggregate holds
 * Σ ρ over exactly the sites it summed, each once: leaving a listed site out, adding one twice or
 * putting another in its place changes that sum.
 */
export function macSiteOffset(key: AggregateMacKey, nonce: MacNonce, site: string): bigint {
  if (typeof site !== 'string' || site.length === 0 || site.length > 128) {
    throw new InvalidArgumentError('site must be a member id', { details: { name: 'site' } });
  }
  const h = createHmac('sha256', key.bytes());
  h.update(nonceBytes('cohort/v1/mac-site', nonce));
  h.update(Buffer.from(site, 'utf8'));
  return h.digest().readBigUInt64BE(0) % MAC_PRIME;
}

/**
 * Σ_i r_i · v_i mod p, plus `acc` (mod p): the linear part of a tag over integer slot values
 * `values` (each an integer of magnitude below 2^53; negatives reduce to their residue).
 */
export function macAccumulate(weights: BigUint64Array, values: ArrayLike<number>, acc = 0n): bigint {
  if (values.length !== weights.length) {
    throw new InvalidArgumentError(`${values.length} values for ${weights.length} weights`, {
      details: { name: 'values' },
    });
  }
  let sum = acc;
  for (let i = 0; i < weights.length; i++) {
    const v = values[i]!;
    if (v === 0) continue;
    sum += weights[i]! * BigInt(v);
    // Keep the BigInt small: every 256 terms (each below 2^114) fold it back below p.
    if ((i & 255) === 255) sum %= MAC_PRIME;
  }
  sum %= MAC_PRIME;
  return sum < 0n ? sum + MAC_PRIME : sum;
}
