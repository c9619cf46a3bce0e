/** Rounds a site left out of a re-sharing stays out of the next rosters (it may rejoin after). */
export const EXCLUDED_ROUNDS = 10;

/**
 * Who sits out the next re-sharing attempts, and why (docs/threshold-ckks.md, "Re-sharing"):
 *
 * - **Silent** sites (no deal, no ready in time) and a complaint's **accuser** are left out for
 *   liveness, and come back first when too few sites are left to make a roster.
 * - A complaint's **accused** dealer is left out too (a dealer that sealed garbage cannot have its
 *   victim left out in its place, and a false complaint costs its sender as much), and comes back
 *   last, only when no one else is left to bring back.
 * - A site that accuses a second dealer within {@link EXCLUDED_ROUNDS} is taken for the liar (one
 *   hostile member cannot be the dealer of both): it is left out as an accused is, and the dealer
 *   it accused before comes back.
 * - A dealer accused by two sites is taken for the culprit (one hostile member cannot be both
 *   accusers): its accusers are not left out.
 * - An accuser that is then silent, or outvoted on the data key, is taken for the liar and
 *   forfeits its accusations: the dealers it accused come back (so a hostile accuser cannot keep
 *   an honest site out by accusing it, going quiet, and accusing it again).
 *
 * Kept in the coordinator's memory: a restarted coordinator starts with no one left out.
 */
export class ReshareExclusions {
  readonly #excluded = new Map<string, number>();
  readonly #accused = new Map<string, { readonly round: number; readonly by: string }>();
  readonly #accusations = new Map<string, { readonly dealer: string; readonly round: number }>();

  /** Whether `site` sits out a re-sharing before round `round`. */
  isOut(site: string, round: number): boolean {
    const r = Math.max(this.#excluded.get(site) ?? -Infinity, this.#accused.get(site)?.round ?? -Infinity);
    return round - r <= EXCLUDED_ROUNDS;
  }

  /** Sites that did not answer an attempt for round `round` (or were outvoted on its data key). */
  silent(sites: readonly string[], round: number): void {
    for (const id of sites) {
      this.#excluded.set(id, round);
      // An accuser that goes quiet after accusing is taken for the liar: otherwise accusing, then
      // staying silent, then accusing again would keep an honest dealer out for ever.
      const accused = this.#accusations.has(id);
      this.#forfeit(id);
      if (accused) this.#accused.set(id, { round, by: id });
    }
  }

  /** The dealers `accuser` accused come back, unless another site accused them too. */
  #forfeit(accuser: string): void {
    for (const [dealer, a] of this.#accused) if (a.by === accuser) this.#accused.delete(dealer);
    this.#accusations.delete(accuser);
  }

  /** An attempt's complaints (accuser → accused dealer) for round `round`; returns who sits out. */
  complaints(pairs: Iterable<readonly [string, string]>, round: number): string[] {
    const out = new Set<string>();
    for (const [accuser, dealer] of pairs) {
      const before = this.#accusations.get(accuser);
      if (before !== undefined && round - before.round <= EXCLUDED_ROUNDS && before.dealer !== dealer) {
        this.#accused.set(accuser, { round, by: accuser });
        if (this.#accused.get(before.dealer)?.by === accuser) this.#accused.delete(before.dealer);
        this.#excluded.delete(accuser);
        out.add(accuser);
        continue;
      }
      const earlier = this.#accused.get(dealer);
      this.#accusations.set(accuser, { dealer, round });
      if (earlier !== undefined && earlier.by !== accuser && round - earlier.round <= EXCLUDED_ROUNDS) {
        // A second accuser of the same dealer: the dealer is the culprit, neither accuser is.
        this.#accused.set(dealer, { round, by: '' });
        this.#excluded.delete(earlier.by);
        out.delete(earlier.by);
        out.add(dealer);
        continue;
      }
      this.#accused.set(dealer, { round, by: accuser });
      this.#excluded.set(accuser, round);
      out.add(accuser).add(dealer);
    }
    return [...out];
  }

  /** Too few sites are left to make a roster: the silent and the accusers come back, else everyone. */
  release(): void {
    if (this.#excluded.size > 0) this.#excluded.clear();
    else this.#accused.clear();
  }
}

/**
 * The sites whose ready confirms another data key than the largest group's (every site when two
 * groups tie for largest); none when all confirm one. Which ready came first decides nothing, so
 * a hostile site cannot leave the honest ones out by answering first.
 */
export function outvotedConfirmations(confirmations: ReadonlyMap<string, string>): string[] {
  const groups = new Map<string, string[]>();
  for (const [site, key] of confirmations) groups.set(key, [...(groups.get(key) ?? []), site]);
  if (groups.size <= 1) return [];
  const sorted = [...groups.values()].sort((a, b) => b.length - a.length);
  const tie = sorted[0]!.length === sorted[1]!.length;
  return (tie ? sorted : sorted.slice(1)).flat().sort();
}
