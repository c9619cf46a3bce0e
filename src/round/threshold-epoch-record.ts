import { bytesEqual } from '../../crypto/digest/index.ts';
import {
  assertRoster,
  epochIdOfDigests,
  epochSeed,
  holds,
  type ThresholdRoster,
} from '../../crypto/threshold/index.ts';
import {
  type ControlBodies,
  type EpochSiteBody,
  type KeyLookup,
  openControl,
  type ThresholdEpochBody,
} from '../protocol/index.ts';

/**
 * A re-sharing of the threshold key epoch (docs/threshold-ckks.md, "Re-sharing"), what every role
 * shares of it: the names of its stored objects, the roster a request or record names, and the
 * rules a logged epoch keeps.
 */

/** Phases of an `epoch-request`: sites deal, then (every deal stored) collect. */
export const EPOCH_PHASES = ['deal', 'collect'] as const;

/**
 * What names one re-sharing attempt's objects: its generation and the first 16 hex digits of its
 * roster's seed. A generation tried again (a coordinator restarted within the second, a clock
 * stepped back) with another roster names other objects, not the first attempt's.
 */
function attemptTag(roster: ThresholdRoster): string {
  return `${roster.generation}-${Buffer.from(epochSeed(roster)).toString('hex').slice(0, 16)}`;
}

/** The object a site's public share certificate is stored as (aggregates store, write-once). */
export function epochDealObjectName(roster: ThresholdRoster, site: string): string {
  return `epoch-${attemptTag(roster)}-deal-${site}`;
}

/** The object a site's public share polynomial (packed c0) is stored as. */
export function epochPublicObjectName(roster: ThresholdRoster, site: string): string {
  return `epoch-${attemptTag(roster)}-public-${site}`;
}

/**
 * The object the envelope `dealer` sealed to `recipient` is stored as. Member ids hold no `_`, so
 * no two pairs share a name.
 */
export function epochShareObjectName(roster: ThresholdRoster, dealer: string, recipient: string): string {
  return `epoch-${attemptTag(roster)}-share-${dealer}_${recipient}`;
}

/** The largest public share certificate: an id, a digest, a commitment and a signature. */
export const PUBLIC_SHARE_CERT_MAX_BYTES = 8 * 1024;

/**
 * The largest envelope: one packed share and a data contribution, with a KEM ciphertext and a
 * signature (16 KiB). Sites read stored envelopes with this cap.
 */
export function envelopeMaxBytes(polyBytes: number): number {
  return polyBytes + 16 * 1024;
}

/**
 * The largest deal of a roster of `sites` sites, in bytes: one envelope per roster site at most,
 * a public share (certificate and c0) and the control message around them (256 KiB). The
 * coordinator refuses a larger deal before decoding it.
 */
export function dealMaxBytes(polyBytes: number, sites: number): number {
  return sites * envelopeMaxBytes(polyBytes) + polyBytes + 256 * 1024;
}

/** A key epoch in force from a round on: its roster, its id, and the round. */
export interface LoggedEpoch {
  readonly roster: ThresholdRoster;
  readonly epochId: Uint8Array;
  /** First round the epoch's keys encrypt (0 for the epoch of the key ceremony). */
  readonly fromRound: number;
}

/**
 * The roster a request or record names, checked (`assertRoster`).
 *
 * @throws InvalidArgumentError naming what is wrong.
 */
export function epochRoster(
  federation: string,
  body: {
    readonly paramsId: Uint8Array;
    readonly threshold: number;
    readonly generation: number;
    readonly sites: readonly EpochSiteBody[];
  },
): ThresholdRoster {
  const holders = body.sites.filter((s) => s.holds === true).map((s) => s.id);
  const roster: ThresholdRoster = {
    federation,
    paramsId: body.paramsId,
    threshold: body.threshold,
    generation: body.generation,
    sites: body.sites.map((s) => ({ id: s.id, point: s.point })),
    ...(holders.length === body.sites.length ? {} : { holders }),
  };
  assertRoster(roster);
  return roster;
}

/** The roster's sites as a request or record carries them. */
export function epochSites(roster: ThresholdRoster): EpochSiteBody[] {
  return roster.sites.map((s) => ({ id: s.id, point: s.point, holds: holds(roster, s.id) }));
}

/** What a reader that holds the registry checks a logged epoch's roster against. */
export interface EpochRegistry {
  /** The signing key of `id` in force (undefined: unknown or revoked). */
  readonly keys: KeyLookup;
  /** Whether `id` is an enrolled site not revoked at `round`. */
  readonly enrolledSite: (id: string, round: number) => boolean;
}

/**
 * What is wrong with a logged epoch, or undefined: a generation ≥ 1, 32-byte ids, a valid roster,
 * one public share digest and one ready per roster site, an epoch id that is the one the roster and
 * the digests give, and, with `registry`, every roster site an enrolled site unrevoked at the
 * epoch's first round whose ready is its own signed `epoch-ready` for this federation, generation,
 * epoch id and first round, all of them confirming one data key.
 */
export function thresholdEpochProblem(
  record: ThresholdEpochBody,
  federation: string,
  registry: EpochRegistry | undefined,
): string | undefined {
  if (!Number.isSafeInteger(record.generation) || record.generation < 1)
    return `threshold epoch of generation ${record.generation}, not ≥ 1`;
  if (!(record.epochId instanceof Uint8Array) || record.epochId.length !== 32)
    return 'threshold epoch id is not 32 bytes';
  if (!(record.paramsId instanceof Uint8Array) || record.paramsId.length !== 32)
    return 'threshold epoch params id is not 32 bytes';
  let roster: ThresholdRoster;
  try {
    roster = epochRoster(federation, record);
  } catch (err) {
    return `threshold epoch ${record.generation}: ${(err as Error).message}`;
  }
  const n = roster.sites.length;
  if (record.publicShareDigests.length !== n || record.publicShareDigests.some((d) => d.length !== 32))
    return `threshold epoch ${record.generation}: ${record.publicShareDigests.length} public share digests for ${n} sites`;
  if (record.readies.length !== n)
    return `threshold epoch ${record.generation}: ${record.readies.length} readies for ${n} sites`;
  if (!bytesEqual(epochIdOfDigests(roster, record.publicShareDigests), record.epochId))
    return `threshold epoch ${record.generation}: its id is not the one its roster and public share digests give`;
  if (registry === undefined) return undefined;
  let confirmation: Uint8Array | undefined;
  for (let k = 0; k < n; k++) {
    const site = roster.sites[k]!.id;
    if (!registry.enrolledSite(site, record.fromRound))
      return `threshold epoch ${record.generation}: ${site} is not an enrolled, unrevoked site at round ${record.fromRound}`;
    let ready: ControlBodies['epoch-ready'];
    try {
      ready = openControl(record.readies[k]!, 'epoch-ready', registry.keys, { signer: site }).body;
    } catch (err) {
      return `threshold epoch ${record.generation}: the ready of ${site}: ${(err as Error).message}`;
    }
    if (
      ready.federation !== federation ||
      ready.generation !== record.generation ||
      ready.site !== site ||
      ready.fromRound !== record.fromRound ||
      !bytesEqual(ready.epochId, record.epochId)
    ) {
      return `threshold epoch ${record.generation}: the ready of ${site} is for another epoch`;
    }
    if (!(ready.keyConfirmation instanceof Uint8Array) || ready.keyConfirmation.length !== 32)
      return `threshold epoch ${record.generation}: the ready of ${site} confirms no data key`;
    confirmation ??= ready.keyConfirmation;
    if (!bytesEqual(confirmation, ready.keyConfirmation))
      return `threshold epoch ${record.generation}: the ready of ${site} confirms another data key than ${roster.sites[0]!.id}'s`;
  }
  return undefined;
}

/** The epoch in force at `round`: the last logged one from that round or before, else `genesis`. */
export function epochAt<E extends { readonly fromRound: number }>(
  genesis: E | undefined,
  logged: readonly E[],
  round: number,
): E | undefined {
  let best = genesis;
  for (const e of logged) if (e.fromRound <= round) best = e;
  return best;
}
