import { InvalidArgumentError } from '../../src/errors/index.ts';
import { centredBinomialCoefficients, ternaryCoefficients } from './rlwe-samplers.ts';
import { addInto, assertPoly, mulAddInto, type RnsPoly, subInto, wipe, zeroPoly } from './rns-poly.ts';
import { shareSecret } from './shamir.ts';
import type { ThresholdContext } from './threshold-context.ts';

/**
 * One site's own RLWE secret s_i for one key epoch: ternary, generated where it stays (no other
 * process ever holds it whole), NTT form at the data level.
 *
 * A site encrypts under its own secret and the position's common random polynomial `a`
 * (multiparty RLWE with a common reference string: Mouchet, Troncoso-Pastoriza, Bossuat, Hubaux,
 * PETS 2021, §3): c0 = Δ·m + e − a·s_i, and (c0, a) is an ordinary CKKS ciphertext under s_i. The
 * c0 of every site at one position add to a ciphertext of the sum under Σ s_i, which no party
 * holds; t sites decrypt it from their Shamir shares of each contributor's s_i
 * (`decryption-share.ts`). Call {@link wipe} when the epoch ends.
 */
export class SiteSecret {
  readonly ctx: ThresholdContext;
  readonly #s: RnsPoly;
  #wiped = false;

  private constructor(ctx: ThresholdContext, s: RnsPoly) {
    this.ctx = ctx;
    this.#s = s;
  }

  /** A fresh secret from the operating system's random source. */
  static generate(ctx: ThresholdContext): SiteSecret {
    const coefficients = ternaryCoefficients(ctx);
    try {
      return new SiteSecret(ctx, ctx.toNtt(coefficients));
    } finally {
      wipe(coefficients);
    }
  }

  /** A secret from its NTT-form words (as {@link exportWords} wrote them); the words are copied. */
  static fromWords(ctx: ThresholdContext, words: RnsPoly): SiteSecret {
    assertPoly(ctx, words, 'site secret');
    return new SiteSecret(ctx, words.slice());
  }

  /**
   * Encrypts one slot vector (length ≤ slots, integers with |v| < 2^exactBits to decrypt
   * exactly once summed) at the position whose common random polynomial is `crp`, and returns c0.
   * Never call it twice with one `crp` (see `commonRandomPoly`).
   */
  encrypt(values: Float64Array, crp: RnsPoly): RnsPoly {
    this.#assertLive();
    assertPoly(this.ctx, crp, 'crp');
    const c0 = this.ctx.encode(values);
    const e = centredBinomialCoefficients(this.ctx);
    addInto(this.ctx, c0, this.ctx.toNtt(e));
    wipe(e);
    const as = zeroPoly(this.ctx);
    mulAddInto(this.ctx, as, crp, this.#s);
    subInto(this.ctx, c0, as);
    wipe(as);
    return c0;
  }

  /**
   * The site's public share at `crp`: an encryption of zero, c0 = e − a·s_i. Published and signed
   * at enrollment, it commits the site to its secret (its fingerprint is what the key ceremony
   * prints) and lets the federation test that the dealt shares decrypt it.
   */
  publicShare(crp: RnsPoly): RnsPoly {
    return this.encrypt(new Float64Array(0), crp);
  }

  /** Shamir shares of the secret for the sites at `points`, `threshold` of which reconstruct it. */
  deal(threshold: number, points: readonly number[]): RnsPoly[] {
    this.#assertLive();
    return shareSecret(this.ctx, this.#s, threshold, points);
  }

  /** The secret's words (NTT form) for the owner's key file; wipe them after use. */
  exportWords(): RnsPoly {
    this.#assertLive();
    return this.#s.slice();
  }

  /** Overwrites the secret; the object is unusable afterwards. */
  wipe(): void {
    if (this.#wiped) return;
    this.#wiped = true;
    wipe(this.#s);
  }

  #assertLive(): void {
    if (this.#wiped) throw new InvalidArgumentError('site secret used after wipe()');
  }
}
