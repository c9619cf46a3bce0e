import type { ControlBodies } from '../protocol/index.ts';

/** The code a NO vote's reason starts with when a decrypting site's share bundle does not open. */
export const SHARES_INVALID_VOTE = 'SHARES_INVALID:';

/** The reason of a NO vote that blames `site`'s share bundle: `SHARES_INVALID:<site> <why>`. */
export function sharesInvalidReason(site: string, why: string): string {
  return `${SHARES_INVALID_VOTE}${site} ${why}`;
}

/**
 * The decrypting site more than half of a round's voters blame for a share bundle that does not
 * open (their NO votes' reasons, {@link sharesInvalidReason}), with those voters; undefined when no
 * site is. A bundle a site signed that every honest voter fails to open is that site's fault, not
 * the voters': one hostile decrypter must not get every honest voter struck. More than half, so a
 * few hostile voters cannot frame an honest decrypter. Shared by the coordinator (it strikes the
 * site and excuses the voters) and the audit (it checks the claim from the logged votes).
 */
export function blamedDecrypter(
  voters: readonly string[],
  votes: ReadonlyMap<string, Pick<ControlBodies['vote'], 'yes' | 'reason' | 'abstain'>>,
): { readonly site: string; readonly voters: readonly string[] } | undefined {
  // An abstention blames no one and is not counted: the coordinator (YES and NO voters) and the
  // audit (every logged voter) then take the majority of the same votes.
  const counted = voters.filter((voter) => votes.get(voter)?.abstain !== true);
  const named = new Map<string, string[]>();
  for (const voter of counted) {
    const v = votes.get(voter);
    if (v === undefined || v.yes || !v.reason.startsWith(SHARES_INVALID_VOTE)) continue;
    const site = v.reason.slice(SHARES_INVALID_VOTE.length).split(' ')[0]!;
    if (site === '' || site === voter) continue;
    named.set(site, [...(named.get(site) ?? []), voter]);
  }
  for (const [site, by] of named) if (by.length * 2 > counted.length) return { site, voters: by.sort() };
  return undefined;
}
