import type { LaneContext, LaneVector } from '../../crypto/lanes/index.ts';
import { BlockRejectedError, CryptoError } from '../errors/index.ts';
import { sameEncoding } from './codec-options.ts';
import { type CryptoTimingObserver, reportCkks } from './crypto-observer.ts';
import type { Contributor, Encoding } from './messages.ts';
import type { VerifiedUpdate } from './verified-update.ts';

/** Block-wise homomorphic sum of verified updates. */
export interface Aggregate {
  readonly encoding: Encoding;
  readonly totalParams: number;
  /** The site updates summed (partial aggregates flattened), in the order they were added. */
  readonly sites: readonly Contributor[];
  /** Sites summed (= sites.length): the K of the lane headroom check. */
  readonly contributors: number;
  /** Σ example weights. */
  readonly totalWeight: number;
  /** Summed ciphertexts (full SEAL ciphertexts, 2 polynomials), in block order. */
  readonly ciphertexts: readonly Uint8Array[];
}

/**
 * Accumulates verified updates into per-block CKKS sums held in SEAL memory. An update is added
 * all-or-nothing: every ciphertext is loaded and checked before any is added, so a bad block never
 * leaves a half-added update behind. Call {@link finish} or {@link dispose} to free SEAL memory.
 */
export class AggregateBuilder {
  readonly #ctx: LaneContext;
  #encoding: Encoding | undefined;
  #totalParams = 0;
  #sums: LaneVector[] = [];
  readonly #sites: Contributor[] = [];
  readonly #siteIds = new Set<string>();
  #weight = 0;
  readonly #timings: CryptoTimingObserver | undefined;

  /**
   * @param pinned the round's encoding and update size (RoundOpen pins both): when given, every
   *   update must match them, so a wrong first update cannot set the size the others are held to.
   * @param options.timings reports each ciphertext loaded (`load`) and each block added (`add`;
   *   the first update added becomes the sum and adds nothing).
   */
  constructor(
    ctx: LaneContext,
    pinned?: { readonly encoding: Encoding; readonly totalParams: number },
    options: { readonly timings?: CryptoTimingObserver } = {},
  ) {
    this.#ctx = ctx;
    this.#timings = options.timings;
    if (pinned !== undefined) {
      this.#encoding = pinned.encoding;
      this.#totalParams = pinned.totalParams;
    }
  }

  /** Sites summed so far. */
  get contributors(): number {
    return this.#sites.length;
  }

  /** Whether `site` is already in the sum (directly or inside a partial aggregate). */
  has(site: string): boolean {
    return this.#siteIds.has(site);
  }

  /**
   * Adds one update. Refuses `ENCODING_MISMATCH` (other encoding), `BLOCK_COUNT_MISMATCH` (other
   * size), `DUPLICATE` (a site already in, e.g. re-routed and sent twice), `LANE_OVERFLOW` (more contributors than the lanes'
   * headroom) and `CKKS_PARAMS_MISMATCH` (a ciphertext that does not load under our parameters).
   */
  add(update: VerifiedUpdate): void {
    // Unpinned, the first update added sets the shape, and only once it is in the sum.
    if (this.#encoding !== undefined) this.#checkShape(update);
    const encoding = this.#encoding ?? update.encoding;
    const again = update.sites.find((c) => this.#siteIds.has(c.site));
    if (again) {
      throw new BlockRejectedError('DUPLICATE', `site ${JSON.stringify(again.site)} is already in the sum`);
    }
    if (update.sites.length !== update.contributors) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `update of ${JSON.stringify(update.signer)} lists ${update.sites.length} sites for ${update.contributors} contributors`,
      );
    }
    const k = this.#sites.length + update.contributors;
    if (k > encoding.maxContributors) {
      throw new BlockRejectedError(
        'LANE_OVERFLOW',
        `summing ${k} contributors would overflow lanes sized for ${encoding.maxContributors}`,
      );
    }
    const loaded: LaneVector[] = [];
    try {
      for (const bytes of update.ciphertexts) loaded.push(this.#load(bytes));
    } catch (err) {
      for (const c of loaded) c.delete();
      throw err;
    }
    if (this.#sums.length === 0) {
      this.#sums = loaded;
    } else {
      for (let b = 0; b < loaded.length; b++) {
        const started = this.#timings === undefined ? 0 : performance.now();
        this.#ctx.addInPlace(this.#sums[b]!, loaded[b]!);
        reportCkks(this.#timings, 'add', started);
        loaded[b]!.delete();
      }
    }
    this.#encoding = encoding;
    this.#totalParams = update.totalParams;
    for (const c of update.sites) {
      this.#siteIds.add(c.site);
      this.#sites.push(c);
    }
    this.#weight += update.exampleWeight;
  }

  #checkShape(update: VerifiedUpdate): void {
    const encoding = this.#encoding!;
    if (!sameEncoding(update.encoding, encoding)) {
      throw new BlockRejectedError(
        'ENCODING_MISMATCH',
        `update of ${JSON.stringify(update.signer)} uses another encoding`,
      );
    }
    if (update.totalParams !== this.#totalParams) {
      throw new BlockRejectedError(
        'BLOCK_COUNT_MISMATCH',
        `update of ${JSON.stringify(update.signer)} has ${update.totalParams} parameters, the sum has ${this.#totalParams}`,
      );
    }
  }

  /** Serializes the sums and frees SEAL memory. Throws if nothing was added. */
  finish(): Aggregate {
    if (this.#encoding === undefined || this.#sites.length === 0)
      throw new BlockRejectedError('BLOCK_COUNT_MISMATCH', 'no update was added');
    const ciphertexts = this.#sums.map((c) => this.#ctx.serialize(c));
    const out: Aggregate = {
      encoding: this.#encoding,
      totalParams: this.#totalParams,
      sites: [...this.#sites],
      contributors: this.#sites.length,
      totalWeight: this.#weight,
      ciphertexts,
    };
    this.dispose();
    return out;
  }

  /** Frees SEAL memory without producing a result. */
  dispose(): void {
    for (const c of this.#sums) c.delete();
    this.#sums = [];
  }

  #load(bytes: Uint8Array): LaneVector {
    const started = this.#timings === undefined ? 0 : performance.now();
    try {
      const loaded = this.#ctx.loadCiphertext(bytes);
      reportCkks(this.#timings, 'load', started);
      return loaded;
    } catch (err) {
      if (err instanceof CryptoError && err.code === 'CKKS_PARAMS_MISMATCH') {
        throw new BlockRejectedError('CKKS_PARAMS_MISMATCH', err.message, { cause: err });
      }
      throw err;
    }
  }
}

/** Sums updates block by block (convenience over {@link AggregateBuilder}); `timings` as there. */
export function sumUpdates(
  ctx: LaneContext,
  updates: readonly VerifiedUpdate[],
  timings?: CryptoTimingObserver,
): Aggregate {
  const builder = new AggregateBuilder(ctx, undefined, { timings });
  try {
    for (const u of updates) builder.add(u);
    return builder.finish();
  } finally {
    builder.dispose();
  }
}
