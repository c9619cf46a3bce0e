import { InvalidArgumentError } from '../../errors/index.ts';

/**
 * The FedAvg weights a round pins (docs/security.md, "Weight caps"): each site's reported example
 * count, capped at `factor` × the lower median of the round's reported counts (the ⌈n/2⌉-th
 * smallest). The lower median moves only when half the sites report more, so one site claiming
 * 10^7 examples beside four of 10^4 weighs at most `factor` × 10^4, and in a round of two it weighs
 * at most `factor` × the other's count (a mean of the middle two would let it name half its own
 * claim). At least ⌈n/2⌉ sites weigh the lower median or more, so one site's share of the total
 * weight is at most factor / (factor + ⌈n/2⌉ − 1) for n sites. Pure; order-independent.
 *
 * @param reported each site's example count (finite, ≥ 0).
 * @param factor the cap over the median (≥ 1, finite): `round.weightCapFactor`.
 */
export function cappedWeights(reported: ReadonlyMap<string, number>, factor: number): Map<string, number> {
  if (!Number.isFinite(factor) || factor < 1) {
    throw new InvalidArgumentError(`factor ${factor} must be ≥ 1`, { details: { name: 'factor' } });
  }
  const counts = [...reported.values()];
  for (const c of counts) {
    if (!Number.isFinite(c) || c < 0) {
      throw new InvalidArgumentError(`an example count ${c} must be finite and ≥ 0`, {
        details: { name: 'reported' },
      });
    }
  }
  const cap = factor * lowerMedian(counts);
  const out = new Map<string, number>();
  for (const [site, c] of reported) out.set(site, Math.min(c, Math.floor(cap)));
  return out;
}

/** The lower median of `values`: the ⌈n/2⌉-th smallest (0 for none). */
function lowerMedian(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[(sorted.length - 1) >> 1]!;
}
