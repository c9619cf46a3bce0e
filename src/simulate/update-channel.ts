import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../../crypto/ckks/index.ts';
import { AggregateMacKey } from '../../crypto/mac/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../../crypto/signature/index.ts';
import { dequantize, dequantizeSum, type QuantBits, quantize } from '../../federation/index.ts';
import {
  AggregateBuilder,
  BlockVerifier,
  decodeAggregate,
  encodeUpdate,
  type RoundContext,
  type RoundMac,
} from '../protocol/index.ts';

/** One site's contribution to a round: its update already scaled by its FedAvg weight share. */
export interface Contribution {
  readonly site: number;
  /** u = Δ · n_k · m / N (so that the plain mean over the m contributions is the weighted mean). */
  readonly update: Float32Array;
}

/** Result of moving a round's updates from sites to the aggregate. */
export interface ChannelResult {
  /** Mean of the contributions as the sites will decode it. */
  readonly mean: Float32Array;
  /** Bytes the sites sent (payload on the wire, all sites). */
  readonly bytesUp: number;
  /** Mean RMS of the contributions (drives the next round's clip). */
  readonly meanRms: number;
}

/** Each site's update as the server receives it, for a rule that looks at every update (plain updates only). */
export interface CollectResult {
  /** Contribution k as decoded by the server (float32, or its dequantized levels). */
  readonly updates: readonly Float32Array[];
  readonly bytesUp: number;
  readonly meanRms: number;
}

/** How updates travel: exact float32, quantized plaintext with error feedback, or the real CKKS codec. */
export interface UpdateChannel {
  readonly mode: 'float32' | 'quantized' | 'he';
  aggregate(round: number, clip: number, contributions: readonly Contribution[]): Promise<ChannelResult>;
  /** The individual updates; absent where the server cannot see them (`he`). */
  collect?(round: number, clip: number, contributions: readonly Contribution[]): Promise<CollectResult>;
  dispose(): void;
}

function rms(u: Float32Array): number {
  let s = 0;
  for (let i = 0; i < u.length; i++) s += u[i]! * u[i]!;
  return Math.sqrt(s / u.length);
}

function meanRmsOf(contributions: readonly Contribution[]): number {
  return contributions.reduce((a, c) => a + rms(c.update), 0) / contributions.length;
}

/** Exact float32 FedAvg: what the codec's results are compared against. */
export function float32Channel(): UpdateChannel {
  return {
    mode: 'float32',
    async aggregate(_round, _clip, contributions) {
      const n = contributions[0]!.update.length;
      const sum = new Float64Array(n);
      for (const c of contributions) for (let i = 0; i < n; i++) sum[i]! += c.update[i]!;
      const mean = new Float32Array(n);
      for (let i = 0; i < n; i++) mean[i] = sum[i]! / contributions.length;
      return { mean, bytesUp: contributions.length * n * 4, meanRms: meanRmsOf(contributions) };
    },
    async collect(_round, _clip, contributions) {
      const n = contributions[0]!.update.length;
      return {
        updates: contributions.map((c) => c.update),
        bytesUp: contributions.length * n * 4,
        meanRms: meanRmsOf(contributions),
      };
    },
    dispose() {},
  };
}

/** Per-site error-feedback state and rounding keys, shared by the quantized and HE channels. */
class SiteResiduals {
  readonly #residuals = new Map<number, Float32Array>();
  get(site: number): Float32Array | null {
    return this.#residuals.get(site) ?? null;
  }
  set(site: number, residual: Float32Array): void {
    this.#residuals.set(site, residual);
  }
}

/** Rounding key of a site in a round: distinct per site, reproducible from the run seed. */
function roundingSeed(runSeed: number, site: number, round: number): { key0: number; key1: number } {
  return { key0: (Math.imul(runSeed ^ 0x5bd1e995, 0x01000193) + site) >>> 0, key1: round >>> 0 };
}

/**
 * Quantized plaintext ("plain" mode): each site quantizes u + e with the round's clip and keeps the
 * residual; the integer levels are summed and dequantized once: exactly the numbers the HE channel
 * decrypts, without the encryption.
 */
export function quantizedChannel(bits: QuantBits, runSeed: number): UpdateChannel {
  const residuals = new SiteResiduals();
  // One site's levels for the round, its new residual kept: what either path sends.
  const levelsOf = (c: Contribution, round: number, clip: number): Uint8Array => {
    const q = quantize(c.update, residuals.get(c.site), {
      bits,
      clip,
      seed: roundingSeed(runSeed, c.site, round),
    });
    residuals.set(c.site, q.residual);
    return q.levels;
  };
  const bytesUp = (contributions: readonly Contribution[]) =>
    contributions.length * Math.ceil((contributions[0]!.update.length * bits) / 8);
  return {
    mode: 'quantized',
    async aggregate(round, clip, contributions) {
      const n = contributions[0]!.update.length;
      const sums = new Float64Array(n);
      for (const c of contributions) {
        const levels = levelsOf(c, round, clip);
        for (let i = 0; i < n; i++) sums[i]! += levels[i]!;
      }
      const sum = dequantizeSum(sums, contributions.length, bits, clip);
      const mean = new Float32Array(n);
      for (let i = 0; i < n; i++) mean[i] = sum[i]! / contributions.length;
      return { mean, bytesUp: bytesUp(contributions), meanRms: meanRmsOf(contributions) };
    },
    async collect(round, clip, contributions) {
      return {
        updates: contributions.map((c) => dequantize(levelsOf(c, round, clip), bits, clip)),
        bytesUp: bytesUp(contributions),
        meanRms: meanRmsOf(contributions),
      };
    },
    dispose() {},
  };
}

/**
 * The real codec: every site runs `encodeUpdate` (quantize, pack, CKKS-encrypt, Falcon-sign), an
 * aggregator verifies and adds the blocks without the secret key, and a site decrypts the sum.
 */
export async function heChannel(
  bits: QuantBits,
  runSeed: number,
  maxContributors: number,
  federation: string,
): Promise<UpdateChannel> {
  const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const keyset = CkksKeyset.create(ctx);
  // The aggregate MAC's key (the federation's sites alone would hold it).
  const macKey = AggregateMacKey.random();
  const residuals = new SiteResiduals();
  const signing = new Map<number, SigningKeyPair>();
  const keyOf = (site: number) => {
    let k = signing.get(site);
    if (!k) {
      k = generateSigningKeyPair('falcon-512');
      signing.set(site, k);
    }
    return k;
  };
  return {
    mode: 'he',
    async aggregate(round, clip, contributions) {
      const context: RoundContext = { federation, round, version: round - 1, baseCommit: new Uint8Array(32) };
      const options = { bits, clip, maxContributors, crcChunkBytes: 16_384 };
      const mac: RoundMac = { key: macKey, nonce: { federation, round, attempt: new Uint8Array(0) } };
      const verifier = new BlockVerifier({
        context,
        ckksParamsId: ctx.paramsId,
        keys: (s) => signing.get(Number(s.slice('site-'.length))),
        allowedAlgorithms: ['falcon-512'],
      });
      const builder = new AggregateBuilder(ctx);
      let bytesUp = 0;
      try {
        for (const c of contributions) {
          const e = encodeUpdate({
            update: c.update,
            residual: residuals.get(c.site),
            credentials: { signer: `site-${c.site}`, ckks: keyset, signing: keyOf(c.site), mac },
            context,
            options,
            exampleWeight: 1,
            roundingSeed: roundingSeed(runSeed, c.site, round),
          });
          residuals.set(c.site, e.residual);
          bytesUp += e.manifest.length + e.blocks.reduce((a, b) => a + b.length, 0);
          builder.add(verifier.verifyUpdate(e));
        }
        const decoded = decodeAggregate(keyset, builder.finish(), mac);
        const n = decoded.sum.length;
        const mean = new Float32Array(n);
        for (let i = 0; i < n; i++) mean[i] = decoded.sum[i]! / contributions.length;
        return { mean, bytesUp, meanRms: meanRmsOf(contributions) };
      } finally {
        builder.dispose();
      }
    },
    dispose() {
      macKey.delete();
      keyset.delete();
    },
  };
}
