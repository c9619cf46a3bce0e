import type { ModelSpec } from '../../federation/index.ts';
import { modelLayout } from '../../federation/index.ts';
import {
  calibrateNoiseMultiplier,
  INTEGER_RDP_ORDERS,
  type PrivacyCharge,
  planSkellamDp,
  RdpLedger,
  type SkellamDpPlan,
  skellamRoundCharge,
} from '../../federation/privacy/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import { digitsPerField } from '../protocol/index.ts';
import { decodeRoundParams, type RoundPrivacy } from '../round/index.ts';
import { bytesToHex, type Commit } from '../versions/index.ts';

/**
 * How a federation with `privacy` configured carries and accounts its updates. Every member derives
 * it from the same configuration and model, so every member adds noise, decodes and charges alike:
 *
 * - a site sends each parameter as the integer `level + noise + valueBound` ∈ [0, 2·valueBound],
 *   split into `digits` lanes of `codec.bits` (the lane headroom then holds the sum of up to
 *   `codec.maxContributors` of them, as for any update);
 * - the summed noise has variance `(z·Δ₂)²` once `round.minContributors` sites contribute, each
 *   adding 1/minContributors of it; a round of more sites carries more noise, never less;
 * - sites are not sampled (q = 1): the log names who took part, so no amplification is claimed.
 */
export interface ServicePrivacy {
  readonly plan: SkellamDpPlan;
  /** Bits of one parameter's field: ⌈log₂(2·valueBound + 1)⌉. */
  readonly fieldBits: number;
  /** Lanes per parameter at `codec.bits`. */
  readonly digits: number;
  readonly epsilon: number;
  readonly delta: number;
}

/** Bits of one parameter's field under `plan`: ⌈log₂(2·valueBound + 1)⌉ (level + noise + offset). */
export function privateFieldBits(plan: SkellamDpPlan): number {
  return Math.ceil(Math.log2(2 * plan.valueBound + 1));
}

/** The privacy of a federation that carries `plan` in lanes of `bits`, with budget ε at δ. */
export function servicePrivacyOf(
  plan: SkellamDpPlan,
  bits: number,
  epsilon: number,
  delta: number,
): ServicePrivacy {
  const fieldBits = privateFieldBits(plan);
  return Object.freeze({ plan, fieldBits, digits: digitsPerField(fieldBits, bits), epsilon, delta });
}

const plans = new WeakMap<CohortConfig, ServicePrivacy>();

/**
 * The privacy plan of `config` for `spec`, or null when `config.privacy` is absent. Computed once
 * per (frozen) configuration: calibrating the noise multiplier takes milliseconds.
 */
export function servicePrivacy(config: CohortConfig, spec: ModelSpec): ServicePrivacy | null {
  const p = config.privacy;
  if (p === undefined) return null;
  const dimension = modelLayout(spec).parameterCount;
  const known = plans.get(config);
  if (known !== undefined && known.plan.settings.dimension === dimension) return known;
  const base = { clipNorm: p.clipNorm, expectedContributors: config.round.minContributors, dimension };
  const noiseMultiplier =
    p.noiseMultiplier ??
    calibrateNoiseMultiplier(base, {
      epsilon: p.epsilon,
      delta: p.delta,
      rounds: p.plannedRounds!,
      samplingRate: 1,
    });
  const made = servicePrivacyOf(
    planSkellamDp({ ...base, noiseMultiplier }),
    config.codec.bits,
    p.epsilon,
    p.delta,
  );
  plans.set(config, made);
  return made;
}

/** The charge of a round that `contributors` sites summed into. */
export function roundCharge(privacy: ServicePrivacy, contributors: number): PrivacyCharge {
  return skellamRoundCharge(privacy.plan, contributors, 1, INTEGER_RDP_ORDERS);
}

/** The privacy a commit records, or null (no privacy trailer, or params that do not decode). */
export function commitPrivacy(commit: Commit): RoundPrivacy | null {
  try {
    return decodeRoundParams(commit.params).privacy ?? null;
  } catch {
    return null;
  }
}

/**
 * What the federation has spent as of `head`: the record of the newest round commit at or below it
 * (rollback and statistics commits release no model update: the walk passes them to their parent,
 * which is the head they were made on, so a rollback never forgets a round it undid). Null before
 * the first private round. `parentOf` reads a commit by hash (undefined when it is not held).
 *
 * @throws InvalidArgumentError when a round commit records no privacy, or an ancestor is missing
 */
export function spentAt(
  head: Commit,
  parentOf: (hash: Uint8Array) => Commit | undefined,
): RoundPrivacy | null {
  let c: Commit | undefined = head;
  while (c !== undefined && c.kind !== 'genesis') {
    if (c.kind === 'round') {
      const recorded = commitPrivacy(c);
      if (recorded === null) {
        throw new InvalidArgumentError(
          `round commit ${bytesToHex(c.hash).slice(0, 12)} (round ${c.round}) records no privacy`,
        );
      }
      return recorded;
    }
    const parent: Commit | undefined = parentOf(c.parent);
    if (parent === undefined) {
      throw new InvalidArgumentError(
        `commit ${bytesToHex(c.parent).slice(0, 12)} (parent of round ${c.round}) is not held`,
      );
    }
    c = parent;
  }
  return null;
}

/** A ledger at the plan's δ and budget holding what `spent` records (nothing when null). */
export function privacyLedger(privacy: ServicePrivacy, spent: RoundPrivacy | null): RdpLedger {
  const ledger = new RdpLedger({ delta: privacy.delta, budget: privacy.epsilon, orders: INTEGER_RDP_ORDERS });
  if (spent !== null) {
    if (spent.rdp.length !== INTEGER_RDP_ORDERS.length) {
      throw new InvalidArgumentError(
        `recorded privacy holds RDP at ${spent.rdp.length} orders, the accountant uses ${INTEGER_RDP_ORDERS.length}`,
      );
    }
    ledger.charge({ rdp: spent.rdp, deltaCost: spent.deltaCost }, 0);
  }
  return ledger;
}

/** What a round of `contributors` sites records on top of `spent`. */
export function nextRoundPrivacy(
  privacy: ServicePrivacy,
  spent: RoundPrivacy | null,
  contributors: number,
): RoundPrivacy {
  const ledger = privacyLedger(privacy, spent);
  const after = ledger.charge(roundCharge(privacy, contributors));
  const { settings } = privacy.plan;
  return {
    contributors,
    noiseMultiplier: settings.noiseMultiplier,
    clipNorm: settings.clipNorm,
    noiseShares: settings.expectedContributors,
    epsilon: after.epsilon,
    delta: privacy.delta,
    deltaCost: after.deltaCost,
    rdp: ledger.rdp(),
  };
}

/** Whether one more round of `round.minContributors` sites (the noisiest that can commit) stays within ε. */
export function budgetAdmits(privacy: ServicePrivacy, spent: RoundPrivacy | null): boolean {
  return privacyLedger(privacy, spent).allows(
    roundCharge(privacy, privacy.plan.settings.expectedContributors),
  );
}
