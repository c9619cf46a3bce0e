import { InvalidArgumentError } from '../../src/errors/index.ts';
import { type RdpConversion, rdpToEpsilon } from './rdp-accountant.ts';
import { planSkellamDp, type SkellamDpSettings, skellamRoundCharge } from './skellam-plan.ts';
import { INTEGER_RDP_ORDERS } from './skellam-rdp.ts';

/** A privacy target: (ε, δ) after `rounds` rounds with sites sampled at rate `samplingRate`. */
export interface EpsilonTarget {
  readonly epsilon: number;
  readonly delta: number;
  readonly rounds: number;
  readonly samplingRate: number;
  readonly conversion?: RdpConversion;
}

/** ε spent after `target.rounds` rounds of every expected contributor at noise multiplier z. */
export function skellamEpsilon(
  settings: SkellamDpSettings,
  target: Omit<EpsilonTarget, 'epsilon'>,
): { epsilon: number; deltaCost: number } {
  const plan = planSkellamDp(settings);
  const charge = skellamRoundCharge(plan, settings.expectedContributors, target.samplingRate);
  const deltaCost = charge.deltaCost! * target.rounds;
  const rest = target.delta - deltaCost;
  if (!(rest > 0)) return { epsilon: Number.POSITIVE_INFINITY, deltaCost };
  const rdp = charge.rdp.map((r) => r * target.rounds);
  return { epsilon: rdpToEpsilon(INTEGER_RDP_ORDERS, rdp, rest, target.conversion).epsilon, deltaCost };
}

/**
 * The smallest noise multiplier (to 0.1%) at which `target.rounds` full rounds spend at most
 * `target.epsilon`, by bisection on log z (ε falls as z grows). `settings.noiseMultiplier` is ignored.
 *
 * @throws InvalidArgumentError when even z = 10⁴ overspends (δ too small for the rounds' δ cost)
 */
export function calibrateNoiseMultiplier(
  settings: Omit<SkellamDpSettings, 'noiseMultiplier'>,
  target: EpsilonTarget,
): number {
  if (!(Number.isFinite(target.epsilon) && target.epsilon > 0)) {
    throw new InvalidArgumentError(`target ε is ${target.epsilon}, it must be finite and > 0`, {
      details: { name: 'epsilon' },
    });
  }
  if (!(Number.isSafeInteger(target.rounds) && target.rounds >= 1)) {
    throw new InvalidArgumentError(`rounds is ${target.rounds}, it must be an integer ≥ 1`, {
      details: { name: 'rounds' },
    });
  }
  const spends = (z: number) => skellamEpsilon({ ...settings, noiseMultiplier: z }, target).epsilon;
  let lo = 1e-2;
  let hi = 1e4;
  if (spends(hi) > target.epsilon) {
    throw new InvalidArgumentError(
      `no noise multiplier up to ${hi} keeps ${target.rounds} rounds within ε ${target.epsilon} at δ ${target.delta}`,
      { details: { name: 'epsilon' } },
    );
  }
  if (spends(lo) <= target.epsilon) return lo;
  while (hi / lo > 1.001) {
    const mid = Math.sqrt(lo * hi);
    if (spends(mid) <= target.epsilon) hi = mid;
    else lo = mid;
  }
  return hi;
}
