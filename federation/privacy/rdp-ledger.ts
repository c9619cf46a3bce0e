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
  readonly delta: number;
  readonly order: number;
  /** Mechanism runs (rounds) charged. */
  readonly runs: number;
}

/**
 * A running privacy budget: the RDP of every sampled Gaussian mechanism charged so far, summed per
 * order (RDP composes by addition), read as (ε, δ) at the configured δ. {@link allows} is the gate
 * a training loop asks before each round, so that it stops before the budget would be exceeded,
 * never after.
 */
export class RdpLedger {
  readonly delta: number;
  /** ε the ledger may spend (∞: no budget, only accounting). */
  readonly budget: number;
  readonly orders: readonly number[];
  readonly conversion: RdpConversion;
  readonly #rdp: number[];
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

  /** What has been spent. */
  spent(): PrivacySpent {
    return this.#read(this.#rdp, this.#runs);
  }

  /** What would be spent after `steps` more runs of the sampled Gaussian mechanism (q, σ); nothing is recorded. */
  preview(q: number, sigma: number, steps = 1): PrivacySpent {
    const add = sampledGaussianRdp(q, sigma, steps, this.orders);
    return this.#read(
      this.#rdp.map((r, i) => r + add[i]!),
      this.#runs + steps,
    );
  }

  /** Whether `steps` more runs (q, σ) stay within the budget. */
  allows(q: number, sigma: number, steps = 1): boolean {
    return this.preview(q, sigma, steps).epsilon <= this.budget;
  }

  /** Records `steps` runs (q, σ) and returns what is spent now (it may exceed the budget: ask {@link allows} first). */
  charge(q: number, sigma: number, steps = 1): PrivacySpent {
    const add = sampledGaussianRdp(q, sigma, steps, this.orders);
    for (const [i, r] of add.entries()) this.#rdp[i]! += r;
    this.#runs += steps;
    return this.spent();
  }

  #read(rdp: readonly number[], runs: number): PrivacySpent {
    const { epsilon, order } = rdpToEpsilon(this.orders, rdp, this.delta, this.conversion);
    return { epsilon, delta: this.delta, order, runs };
  }
}
