import { counterRandom, counterUniform } from '../../federation/index.ts';
import {
  addSkellamNoise,
  calibrateNoiseMultiplier,
  INTEGER_RDP_ORDERS,
  type PrivacyCharge,
  type PrivacySpent,
  planSkellamDp,
  RdpLedger,
  roundWithinNorm,
  type SkellamDpPlan,
  seededUniformSource,
  skellamRoundCharge,
} from '../../federation/privacy/index.ts';
import { clipToL2Norm } from '../../federation/robust/index.ts';
import { privateFieldBits } from '../services/privacy-plan.ts';
import type { PrivacyConfig } from './experiment-schema.ts';
import type { Contribution } from './update-channel.ts';

const ROUNDING_STREAM = 0x4450_0001;
const NOISE_STREAM = 0x4450_0002;
const SAMPLING_STREAM = 0x4450_0003;

/** What one private round released. */
export interface PrivateRound {
  /** Σ (rounded clipped updates + every site's noise share) / (scale · expected sampled sites). */
  readonly mean: Float32Array;
  /** Sampled sites whose update was clipped (norm above the clip norm). */
  readonly clipped: number;
  /** Sampled sites whose training diverged (a non-finite update): they sent a zero update. */
  readonly diverged: number;
  /** Bytes the sites sent: every site sends a share, sampled or not. */
  readonly bytesUp: number;
  /** Spent after this round. */
  readonly spent: PrivacySpent;
}

/**
 * The site-level distributed Skellam mechanism of a simulated federation, as the sites and the
 * accountant run it:
 *
 * - Each round every site flips its own coin and takes part with probability q (Poisson sampling,
 *   secret: a site that is not sampled still sends a noise share with a zero update, so the sum,
 *   and anyone who sees only ciphertexts, cannot tell; this is what makes the amplification claim hold).
 * - A sampled site clips its update to L2 norm C, rounds `scale·u` to integers within the plan's
 *   norm bound, and adds its Skellam share; the N shares sum to Skellam of variance (z·Δ₂)².
 * - The server divides the sum by the expected number of sampled sites, q·N (DP-FedAvg's fixed
 *   denominator), so the released model does not depend on how many were sampled.
 *
 * Here the N noise shares are drawn as their sum, one Skellam((z·Δ₂)²) draw per coordinate: the
 * same distribution (Skellam is closed under addition) at 1/N of the cost. Draws come from the run
 * seed, reproducible and therefore not secret; a site agent draws from the CSPRNG.
 */
export class PrivateAggregation {
  readonly plan: SkellamDpPlan;
  readonly ledger: RdpLedger;
  readonly samplingRate: number;
  readonly siteCount: number;
  readonly #seed: number;
  readonly #charge: PrivacyCharge;

  constructor(
    config: PrivacyConfig,
    options: { sites: number; dimension: number; samplingRate: number; rounds: number; seed: number },
  ) {
    const base = {
      clipNorm: config.clipNorm,
      expectedContributors: options.sites,
      dimension: options.dimension,
    };
    const noiseMultiplier =
      config.noiseMultiplier ??
      calibrateNoiseMultiplier(base, {
        epsilon: config.epsilon!,
        delta: config.delta,
        rounds: config.plannedRounds ?? options.rounds,
        samplingRate: options.samplingRate,
      });
    this.plan = planSkellamDp({ ...base, noiseMultiplier });
    this.ledger = new RdpLedger({
      delta: config.delta,
      orders: INTEGER_RDP_ORDERS,
      ...(config.epsilon === undefined ? {} : { budget: config.epsilon }),
    });
    this.samplingRate = options.samplingRate;
    this.siteCount = options.sites;
    this.#seed = options.seed >>> 0;
    this.#charge = skellamRoundCharge(this.plan, options.sites, options.samplingRate);
  }

  /** Sites that take part in `round`: each independently with probability q. */
  sample(round: number): number[] {
    const chosen: number[] = [];
    for (let site = 0; site < this.siteCount; site++) {
      if (counterUniform(this.#seed, (SAMPLING_STREAM + round) >>> 0, site) < this.samplingRate)
        chosen.push(site);
    }
    return chosen;
  }

  /** Whether one more round stays within the budget (always, without one). */
  allowsRound(): boolean {
    return this.ledger.allows(this.#charge);
  }

  /** Releases one round's noisy mean and charges it. `contributions` hold the sampled sites' unweighted updates. */
  aggregate(round: number, dimension: number, contributions: readonly Contribution[]): PrivateRound {
    const { plan } = this;
    const sum = new Int32Array(dimension);
    let clipped = 0;
    let diverged = 0;
    for (const c of contributions) {
      // A site whose training diverged has nothing to send but its noise share (a zero update).
      if (!c.update.every(Number.isFinite)) {
        diverged += 1;
        continue;
      }
      const clip = clipToL2Norm(c.update, plan.settings.clipNorm);
      if (clip.scaled) clipped += 1;
      const uniform = seededUniformSource(
        counterRandom(this.#seed, (ROUNDING_STREAM + round) >>> 0, c.site),
        0,
      );
      const { levels } = roundWithinNorm(clip.clipped, plan.scale, plan.sensitivity.l2, uniform);
      for (let i = 0; i < dimension; i++) sum[i]! += levels[i]!;
    }
    const totalVariance = this.siteCount * plan.localVariance;
    const noise = seededUniformSource(counterRandom(this.#seed, NOISE_STREAM, round >>> 0), 1);
    addSkellamNoise(sum, totalVariance, this.siteCount * plan.noiseRange, noise);
    const denominator = plan.scale * this.samplingRate * this.siteCount;
    const mean = new Float32Array(dimension);
    for (let i = 0; i < dimension; i++) mean[i] = sum[i]! / denominator;
    const laneBits = privateFieldBits(plan);
    const spent = this.ledger.charge(this.#charge);
    return {
      mean,
      clipped,
      diverged,
      bytesUp: this.siteCount * Math.ceil((dimension * laneBits) / 8),
      spent,
    };
  }
}
