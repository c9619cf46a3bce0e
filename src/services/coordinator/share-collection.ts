import { rosterHolders } from '../../../crypto/threshold/index.ts';
import {
  type AggregateInfo,
  type ControlBodies,
  type CulpritRecord,
  sealControl,
} from '../../protocol/index.ts';
import {
  blamedDecrypter,
  encodeSharesObject,
  type ShareContext,
  shareContextOf,
  shareRequestObjectName,
  sharesObjectName,
} from '../../round/index.ts';
import { failpoint } from '../failpoint.ts';
import type { ActiveRound, RoundHost } from './round-host.ts';

/** Rounds a site that sent no shares stays last in line for the decrypting set. */
const SILENCE_ROUNDS = 10;

/**
 * Threshold keys, between storing the aggregate and PREPARE (docs/threshold-ckks.md, "The
 * round's decryption shares"): names the decrypting set (t sites of the epoch's roster at the head
 * that heartbeat after the aggregate is stored, waiting up to two heartbeat intervals for every
 * live holder and up to the liveness window for t of them; the round's contributors first, sites
 * lately silent last), publishes the signed share
 * request, waits up to `round.voteTimeoutMs` for each named site's bundle (verified on intake,
 * {@link MemberIntake.share}), and stores the request and the bundles beside the aggregate
 * (`round-<n>-shares`), where every voter and every later reader finds them. The coordinator cannot
 * open a bundle: they are sealed under a key derived from the data key, which only sites hold.
 *
 * One set per attempt: a site never makes shares for two sets of one attempt, so a silent
 * decrypter fails the round (the next round is a new attempt, without it) rather than being
 * replaced. Returns undefined when stopped, `failed` with the silent sites, or nothing to report.
 */
export async function collectShares(
  host: RoundHost,
  state: ActiveRound,
  aggregate: { readonly info: AggregateInfo; readonly digest: Uint8Array; readonly blocks: number },
  open: ControlBodies['round-open'],
): Promise<
  { readonly failed: string; readonly silent: readonly string[] } | { readonly stored: string } | undefined
> {
  const { ctx } = host;
  const { info } = aggregate;
  const epoch = host.threshold!;
  const head = host.log.history.head.commit;
  const headRef = { hash: head.hash, height: head.height };
  const contributed = new Set(info.contributors.map((c) => c.site));
  // Sites that answer now, not sites heard from a liveness window ago: a contributor that stopped
  // after its upload sends no heartbeat after this point and is not asked (every live site
  // heartbeats within round.heartbeatMs).
  const since = host.now();
  // Only the epoch's key holders hold shares of the contributors' secrets.
  const holderSites = rosterHolders(epoch.roster);
  const roster = new Set(holderSites.map((s) => s.id));
  const fresh = (id: string) => (host.membership.view(id)?.lastSeen ?? 0) > since;
  const live = () => host.membership.eligibleSites(headRef).filter((id) => roster.has(id));
  await host.until(() => live().every(fresh), since + 2 * ctx.config.round.heartbeatMs);
  if (host.stopping()) return undefined;
  // A holder on a loaded host heartbeats late, yet inside the liveness window: a set short of t
  // waits for it that long (from the aggregate) before the round fails, rather than aborting a
  // round that t live holders can decrypt.
  const t = epoch.roster.threshold;
  const enough = () => live().filter(fresh).length >= t;
  if (!enough()) {
    const window = ctx.config.round.missedHeartbeats * ctx.config.round.heartbeatMs;
    await host.until(enough, since + window);
    if (host.stopping()) return undefined;
  }
  const eligible = new Set(live().filter(fresh));
  const silentSince = (site: string) => {
    const r = host.silentDecrypters.get(site);
    return r !== undefined && state.round - r <= SILENCE_ROUNDS;
  };
  const rank = (site: string) => (silentSince(site) ? 2 : contributed.has(site) ? 0 : 1);
  const candidates = holderSites
    .filter((s) => eligible.has(s.id))
    .sort((a, b) => rank(a.id) - rank(b.id) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (candidates.length < t) {
    return {
      failed: `only ${candidates.length} key holder(s) of the epoch can decrypt now, the threshold is ${t}`,
      silent: [],
    };
  }
  const decrypting = candidates
    .slice(0, t)
    .map((s) => ({ site: s.id, point: s.point }))
    .sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
  const body: ControlBodies['share-request'] = {
    federation: open.federation,
    round: open.round,
    attempt: open.attempt,
    epochId: epoch.epochId,
    aggregateDigest: aggregate.digest,
    blocks: aggregate.blocks,
    contributors: [...contributed].sort(),
    decrypting,
    minContributors: ctx.config.round.minContributors,
    aggregateObject: info.object,
  };
  const context: ShareContext = shareContextOf(body);
  const bytes = sealControl('share-request', body, ctx.member, ctx.signing);
  // Stored write-once before it is sent: a site answers only the request it finds there, so no
  // two sites can be shown two contexts for one attempt (two sets, or two cohorts, at one position
  // would open a site's update).
  try {
    await (await host.aggregates()).put(shareRequestObjectName(state.round), bytes);
  } catch (err) {
    ctx.log.error({ round: state.round, err }, 'cannot store the share request');
    return { failed: `cannot store the share request: ${(err as Error).message}`, silent: [] };
  }
  state.shareRequest = { context, bytes };
  state.phase = 'sharing';
  host.setPhase('sharing');
  try {
    await ctx.transport.publish(ctx.subjects.shareRequest, bytes);
  } catch (err) {
    // Nobody was asked: nobody is silent.
    ctx.log.error({ round: state.round, err }, 'share request not published');
    return { failed: `share request not published: ${(err as Error).message}`, silent: [] };
  }
  failpoint('coordinator.shares-requested', state.round);
  const all = () => decrypting.every((d) => state.shares.has(d.site));
  await host.until(all, host.now() + ctx.config.round.voteTimeoutMs);
  if (host.stopping()) return undefined;
  if (!all()) {
    const silent = decrypting.filter((d) => !state.shares.has(d.site)).map((d) => d.site);
    for (const site of silent) host.silentDecrypters.set(site, state.round);
    return { failed: `decrypting site(s) ${silent.join(', ')} sent no decryption shares in time`, silent };
  }
  const name = sharesObjectName(state.round);
  try {
    await (await host.aggregates()).put(
      name,
      encodeSharesObject(
        bytes,
        decrypting.map((d) => state.shares.get(d.site)!),
      ),
    );
  } catch (err) {
    ctx.log.error({ round: state.round, err }, 'cannot store the decryption shares');
    return { failed: `cannot store the decryption shares: ${(err as Error).message}`, silent: [] };
  }
  for (const d of decrypting) host.silentDecrypters.delete(d.site);
  return { stored: name };
}

/**
 * Threshold keys: the decrypting site more than half of the round's `voters` blame for a share
 * bundle that does not open (`blamedDecrypter`), as the round's culprit (`SHARES_INVALID`), and
 * the voters it misled, excused; nothing when no site of the round's decrypting set is blamed.
 */
export function invalidShares(
  state: ActiveRound,
  voters: readonly string[],
): { readonly culprits: readonly CulpritRecord[]; readonly excused: readonly string[] } {
  const blamed = blamedDecrypter(voters, state.votes);
  if (blamed === undefined || !state.shareRequest?.context.decrypting.some((d) => d.site === blamed.site)) {
    return { culprits: [], excused: [] };
  }
  return {
    culprits: [
      {
        member: blamed.site,
        role: 'site',
        fault: 'SHARES_INVALID',
        detail: `its decryption shares did not open for ${blamed.voters.length} of the round's voters`,
        evidence: '',
      },
    ],
    excused: blamed.voters,
  };
}
