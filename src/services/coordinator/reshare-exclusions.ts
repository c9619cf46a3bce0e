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
 *
 * Kept in the coordinator's memory: a restarted coordinator starts with no one left out.
 */
export class ReshareExclusions {
  readonly #excluded = new Map<string, number>();
  readonly #accused = new Map<string, { readonly round: number; readonly by: string }>();
  readonly #accusations = new Map<string, { readonly dealer: string; readonly round: number }>();

  /** Whether `site` sits out a re-sharing before round `round`. */
  isOut(site: string, round: number): boolean {
    const r = this.#excluded.get(site) ?? this.#accused.get(site)?.round;
    return r !== undefined && round - r <= EXCLUDED_ROUNDS;
  }

  /** Sites that did not answer an attempt for round `round`. */
  silent(sites: readonly string[], round: number): void {
    for (const id of sites) this.#excluded.set(id, round);
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
      this.#accusations.set(accuser, { dealer, round });
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
