import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import type { LaneContext, LaneKeyset, LanePosition, LaneVector } from '../lanes/lane-cipher.ts';
import { commonRandomPoly } from './common-random-poly.ts';
import { combineShares } from './decryption-share.ts';
import { packedBytes, packWords, unpackWords } from './packed-words.ts';
import type { PositionLedger } from './position-ledger.ts';
import { addInto, assertPoly, type RnsPoly, wipe } from './rns-poly.ts';
import type { SiteSecret } from './site-secret.ts';
import type { ThresholdContext } from './threshold-context.ts';

/** A loaded threshold payload: the c0 of one block, or of a sum of blocks. */
export class ThresholdLaneVector implements LaneVector {
  readonly c0: RnsPoly;
  constructor(c0: RnsPoly) {
    this.c0 = c0;
  }
  delete(): void {
    this.c0.fill(0n);
  }
}

/**
 * What the wire and the aggregation tree need of threshold CKKS, with no secret. A payload is
 * the c0 of one ciphertext position (its c1 is the position's common random polynomial, which
 * nobody sends): limbs · N words packed at 60 bits (`packed-words.ts`), each below its limb's prime. Sums are
 * word-wise modular additions, so aggregators add exactly as they did under a shared key.
 */
export class ThresholdLaneContext implements LaneContext {
  readonly mode = 'he' as const;
  readonly tc: ThresholdContext;
  readonly paramsId: Uint8Array;
  readonly slots: number;
  readonly params: { readonly exactBits: number; readonly scaleBits: number };
  readonly maxCiphertextBytes: number;

  constructor(tc: ThresholdContext) {
    this.tc = tc;
    this.paramsId = tc.paramsId;
    this.slots = tc.slots;
    this.params = Object.freeze({ exactBits: tc.params.exactBits, scaleBits: tc.params.scaleBits });
    this.maxCiphertextBytes = packedBytes(tc);
  }

  /** Loads a payload, refusing a wrong length or a word not below its prime (`CKKS_PARAMS_MISMATCH`). */
  loadCiphertext(bytes: Uint8Array): ThresholdLaneVector {
    return new ThresholdLaneVector(unpackWords(this.tc, bytes));
  }

  addInPlace(accumulator: LaneVector, addend: LaneVector): void {
    addInto(this.tc, asVector(accumulator).c0, asVector(addend).c0);
  }

  serialize(vector: LaneVector): Uint8Array {
    return packWords(this.tc, asVector(vector).c0);
  }
}

function asVector(v: LaneVector): ThresholdLaneVector {
  if (!(v instanceof ThresholdLaneVector)) throw new InvalidArgumentError('not a threshold payload');
  return v;
}

/**
 * A site's threshold keyset for one key epoch: encrypts under its own secret at each position's
 * common random polynomial, and refuses a second encryption at a position it already used (two
 * ciphertexts at one position reveal the difference of their messages): in memory always, and
 * across restarts with a {@link PositionLedger}, which a site running rounds must give it. It
 * cannot decrypt: an aggregate decrypts only with t sites' decryption shares ({@link SharesDecryptor}).
 */
export class ThresholdLaneKeyset implements LaneKeyset {
  readonly ctx: ThresholdLaneContext;
  readonly epochId: Uint8Array;
  readonly #secret: SiteSecret;
  readonly #used = new Set<string>();
  readonly #ledger: PositionLedger | undefined;

  /**
   * `epochId`: the 32-byte id of the key epoch the secret belongs to; `ledger`: the site's
   * persistent record of used positions for this epoch (each encryption is claimed on disk first).
   */
  constructor(ctx: ThresholdLaneContext, secret: SiteSecret, epochId: Uint8Array, ledger?: PositionLedger) {
    if (!(epochId instanceof Uint8Array) || epochId.length !== 32)
      throw new InvalidArgumentError('epochId must be 32 bytes');
    this.ctx = ctx;
    this.#secret = secret;
    this.epochId = epochId.slice();
    this.#ledger = ledger;
  }

  encrypt(values: Float64Array, position?: LanePosition): Uint8Array {
    if (position === undefined)
      throw new InvalidArgumentError('threshold encryption needs the payload position');
    const key = `${position.label}\0${position.index}`;
    if (this.#used.has(key)) {
      throw new CryptoError(
        'POSITION_REUSED',
        `already encrypted at ${position.label} block ${position.index}: a second message there would reveal both`,
      );
    }
    const crp = commonRandomPoly(this.ctx.tc, this.epochId, position.label, position.index);
    this.#ledger?.claimEncryption(this.epochId, position.label, position.index);
    this.#used.add(key);
    const c0 = this.#secret.encrypt(values, crp);
    return packWords(this.ctx.tc, c0);
  }

  decrypt(): Float64Array {
    throw new CryptoError(
      'THRESHOLD_SHARES_NEEDED',
      'a threshold ciphertext decrypts only with t decryption shares',
    );
  }

  /** Forgets the positions used and wipes the secret. */
  delete(): void {
    this.#used.clear();
    this.#secret.wipe();
  }
}

/**
 * Decrypts the blocks of one aggregate from the decryption shares of a decrypting set:
 * `shares[b]` holds one share per decrypting site for block `b`.
 */
export class SharesDecryptor implements LaneKeyset {
  readonly ctx: ThresholdLaneContext;
  readonly #shares: readonly (readonly RnsPoly[])[];

  /** Checks every share against the context's primes and keeps copies (wiped by {@link delete}). */
  constructor(ctx: ThresholdLaneContext, shares: readonly (readonly RnsPoly[])[]) {
    if (!Array.isArray(shares) || shares.length === 0)
      throw new InvalidArgumentError('shares must hold one list per block');
    const t = shares[0]!.length;
    this.ctx = ctx;
    this.#shares = shares.map((block, b) => {
      if (!Array.isArray(block) || block.length === 0 || block.length !== t) {
        throw new InvalidArgumentError(`shares[${b}] must hold one share per decrypting site (${t})`);
      }
      return block.map((d, x) => {
        assertPoly(ctx.tc, d, `shares[${b}][${x}]`);
        return d.slice();
      });
    });
  }

  encrypt(): Uint8Array {
    throw new InvalidArgumentError('a shares decryptor does not encrypt');
  }

  decrypt(payload: Uint8Array, block?: number): Float64Array {
    if (block === undefined || !Number.isInteger(block) || this.#shares[block] === undefined) {
      throw new InvalidArgumentError(`no decryption shares for block ${block}`);
    }
    const v = this.ctx.loadCiphertext(payload);
    try {
      return combineShares(this.ctx.tc, v.c0, this.#shares[block]!);
    } finally {
      v.delete();
    }
  }

  /** Wipes the shares. */
  delete(): void {
    for (const block of this.#shares) for (const d of block) wipe(d);
  }
}
