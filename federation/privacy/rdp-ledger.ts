import { InvalidArgumentError } from '../../src/errors/index.ts';
import {
  DEFAULT_RDP_ORDERS,
  type RdpConversion,
  rdpToEpsilon,
  sampledGaussianRdp,
} from './rdp-accountant.ts';

/** (ε, δ) spent so far, and the Rényi order that gives that ε. */
export interface PrivacySpent {
  readonly epsilon: number;
  /** The configured δ: the total the guarantee is stated at. */
  readonly delta: number;
  /** Part of δ spent outside RDP (noise clamped to its lane range); ε is read at δ minus this. */
  readonly deltaCost: number;
  readonly order: number;
  /** Mechanism runs (rounds) charged. */
  readonly runs: number;
}

/** One run's charge: RDP at each of the ledger's orders, and any δ spent outside RDP. */
export interface PrivacyCharge {
  readonly rdp: readonly number[];
  /** Probability mass by which the run may differ from the mechanism RDP describes (≥ 0). */
  readonly deltaCost?: number;
}

/**
 * A running privacy budget: the RDP of every mechanism run charged so far, summed per order (RDP
 * composes by addition), read as (ε, δ) at the configured δ less the δ charged outside RDP.
 * {@link allows} is the gate a training loop asks before each round, so that it stops before the
 * budget would be exceeded, never after.
 */
export class RdpLedger {
  readonly delta: number;
  /** ε the ledger may spend (∞: no budget, only accounting). */
  readonly budget: number;
  readonly orders: readonly number[];
  readonly conversion: RdpConversion;
  readonly #rdp: number[];
  #deltaCost = 0;
  #runs = 0;

  constructor(options: {
    readonly delta: number;
    readonly budget?: number;
    readonly orders?: readonly number[];
    readonly conversion?: RdpConversion;
  }) {
    const budget = options.budget ?? Number.POSITIVE_INFINITY;
    if (!(budget > 0)) {
      throw new InvalidArgumentError(`budget is ${budget}, it must be > 0`, { details: { name: 'budget' } });
    }
    this.delta = options.delta;
    this.budget = budget;
    this.orders = Object.freeze([...(options.orders ?? DEFAULT_RDP_ORDERS)]);
    this.conversion = options.conversion ?? 'improved';
    this.#rdp = this.orders.map(() => 0);
    rdpToEpsilon(this.orders, this.#rdp, this.delta, this.conversion); // checks orders and δ now
  }

  /** The charge of `steps` runs of the Poisson-subsampled Gaussian mechanism (q, σ) at this ledger's orders. */
  gaussian(q: number, sigma: number, steps = 1): PrivacyCharge {
    return { rdp: sampledGaussianRdp(q, sigma, steps, this.orders) };
  }

  /** The RDP charged so far at each of {@link orders} (a copy). */
  rdp(): number[] {
    return [...this.#rdp];
  }

  /** What has been spent. */
  spent(): PrivacySpent {
    return this.#read(this.#rdp, this.#deltaCost, this.#runs);
  }

  /** What would be spent after `charge` over `steps` runs; nothing is recorded. */
  preview(charge: PrivacyCharge, steps = 1): PrivacySpent {
    this.#check(charge);
    return this.#read(
      this.#rdp.map((r, i) => r + charge.rdp[i]!),
      this.#deltaCost + (charge.deltaCost ?? 0),
      this.#runs + steps,
    );
  }

  /** Whether `charge` stays within the budget. */
  allows(charge: PrivacyCharge, steps = 1): boolean {
    return this.preview(charge, steps).epsilon <= this.budget;
  }

  /** Records `charge` (`steps` runs) and returns what is spent now (it may exceed the budget: ask {@link allows} first). */
  charge(charge: PrivacyCharge, steps = 1): PrivacySpent {
    this.#check(charge);
    for (const [i, r] of charge.rdp.entries()) this.#rdp[i]! += r;
    this.#deltaCost += charge.deltaCost ?? 0;
    this.#runs += steps;
    return this.spent();
  }

  #check(charge: PrivacyCharge): void {
    if (charge.rdp.length !== this.orders.length) {
      throw new InvalidArgumentError(
        `charge has RDP at ${charge.rdp.length} orders, the ledger accounts at ${this.orders.length}`,
        { details: { name: 'charge.rdp' } },
      );
    }
    const cost = charge.deltaCost ?? 0;
    if (!(Number.isFinite(cost) && cost >= 0)) {
      throw new InvalidArgumentError(`charge.deltaCost is ${cost}, it must be finite and ≥ 0`, {
        details: { name: 'charge.deltaCost' },
      });
    }
  }

  #read(rdp: readonly number[], deltaCost: number, runs: number): PrivacySpent {
    const rest = this.delta - deltaCost;
    if (!(rest > 0)) {
      return { epsilon: Number.POSITIVE_INFINITY, delta: this.delta, deltaCost, order: Number.NaN, runs };
    }
    const { epsilon, order } = rdpToEpsilon(this.orders, rdp, rest, this.conversion);
    return { epsilon, delta: this.delta, deltaCost, order, runs };
  }
}
