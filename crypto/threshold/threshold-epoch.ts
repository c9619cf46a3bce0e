import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { commonRandomPoly } from './common-random-poly.ts';
import type { RnsPoly, RnsShape } from './rns-poly.ts';
import { assertPoints } from './shamir.ts';

/**
 * A key epoch of threshold CKKS: the roster of sites (each with its Shamir evaluation point), the
 * threshold, the key holders and the parameters. Every site of the roster encrypts under its own
 * secret and deals one Shamir share of it to every holder; any `threshold` holders decrypt an
 * aggregate together. With every site a holder (the default), that is all-to-all dealing; a
 * smaller set of holders (a decryption committee) keeps dealing linear in the number of sites. A
 * membership change starts a new epoch with fresh secrets.
 */
export interface ThresholdRoster {
  readonly federation: string;
  /** {@link ThresholdParams} id the epoch's ciphertexts use. */
  readonly paramsId: Uint8Array;
  readonly threshold: number;
  /**
   * The epoch's generation: 0 for the first key ceremony; each re-sharing attempt takes a fresh
   * one, above every generation logged or tried before (the coordinator's clock in seconds, or
   * one more). Bound into the seed, so no share or public share of one attempt passes for
   * another's, even with the same sites.
   */
  readonly generation: number;
  /** The sites, each with its evaluation point (distinct, 1 … 65536), in a fixed order. */
  readonly sites: readonly { readonly id: string; readonly point: number }[];
  /**
   * The key holders (the decryption committee): roster sites in roster order, at least
   * `threshold` of them. Undefined: every roster site holds.
   */
  readonly holders?: readonly string[];
}

/** Whether `site` holds shares in the epoch (every roster site when the roster names no holders). */
export function holds(roster: ThresholdRoster, site: string): boolean {
  return roster.holders === undefined
    ? roster.sites.some((s) => s.id === site)
    : roster.holders.includes(site);
}

/** The roster's holders with their points, in roster order. */
export function rosterHolders(
  roster: ThresholdRoster,
): readonly { readonly id: string; readonly point: number }[] {
  return roster.holders === undefined
    ? roster.sites
    : roster.sites.filter((s) => roster.holders!.includes(s.id));
}

const SEED_DOMAIN = 'cohort/v1/threshold-epoch-seed\0';
const ID_DOMAIN = 'cohort/v1/threshold-epoch\0';

/** Throws `INVALID_ARGUMENT` naming what is wrong with a roster. */
export function assertRoster(roster: ThresholdRoster): void {
  if (!(roster.paramsId instanceof Uint8Array) || roster.paramsId.length !== 32) {
    throw new InvalidArgumentError('roster.paramsId must be 32 bytes');
  }
  const ids = roster.sites.map((s) => s.id);
  if (new Set(ids).size !== ids.length) throw new InvalidArgumentError('roster.sites lists a site twice');
  for (const id of ids) {
    if (typeof id !== 'string' || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(id)) {
      throw new InvalidArgumentError(`roster.sites: ${JSON.stringify(id)} is not a member id`);
    }
  }
  assertPoints(
    roster.sites.map((s) => s.point),
    'roster.sites points',
  );
  if (!Number.isSafeInteger(roster.generation) || roster.generation < 0 || roster.generation > 0xffff_ffff) {
    throw new InvalidArgumentError(`roster.generation ${roster.generation} must be an integer in [0, 2^32)`);
  }
  if (roster.holders !== undefined) {
    const order = new Map(ids.map((id, k) => [id, k]));
    let last = -1;
    for (const h of roster.holders) {
      const k = order.get(h);
      if (k === undefined)
        throw new InvalidArgumentError(`roster.holders: ${JSON.stringify(h)} is not a roster site`);
      if (k <= last)
        throw new InvalidArgumentError('roster.holders must be distinct roster sites in roster order');
      last = k;
    }
  }
  const holders = roster.holders?.length ?? roster.sites.length;
  if (!Number.isInteger(roster.threshold) || roster.threshold < 1 || roster.threshold > holders) {
    throw new InvalidArgumentError(
      `roster.threshold ${roster.threshold} must be in [1, ${holders}] (the holders)`,
    );
  }
}

/**
 * Canonical bytes of a roster: federation, parameters, threshold, generation, then each site, its
 * point and whether it holds (so naming every site a holder and naming none are the same roster).
 */
function rosterBytes(roster: ThresholdRoster): Buffer {
  assertRoster(roster);
  const parts: Buffer[] = [Buffer.from(`${roster.federation}\0`), Buffer.from(roster.paramsId)];
  const t = Buffer.alloc(8);
  t.writeUInt32BE(roster.threshold);
  t.writeUInt32BE(roster.generation, 4);
  parts.push(t);
  for (const s of roster.sites) {
    const p = Buffer.alloc(5);
    p.writeUInt32BE(s.point);
    p[4] = holds(roster, s.id) ? 1 : 0;
    parts.push(Buffer.from(`${s.id}\0`), p);
  }
  return Buffer.concat(parts);
}

/** The roster's seed: the position of the sites' public shares derives from it. */
export function epochSeed(roster: ThresholdRoster): Uint8Array {
  return new Uint8Array(createHash('sha256').update(SEED_DOMAIN).update(rosterBytes(roster)).digest());
}

/** The common random polynomial the sites' public shares are encrypted at (one per roster). */
export function publicShareCrp(shape: RnsShape, roster: ThresholdRoster): RnsPoly {
  return commonRandomPoly(shape, epochSeed(roster), 'public-share', 0);
}

/**
 * The epoch id: SHA-256 over the roster's seed and the SHA-256 of every site's public share (its
 * packed c0), in roster order. Rounds derive their positions from it, so every ciphertext is bound
 * to the roster and to the secrets the sites committed to.
 */
export function epochId(roster: ThresholdRoster, publicShares: ReadonlyMap<string, Uint8Array>): Uint8Array {
  return epochIdOfDigests(
    roster,
    roster.sites.map((s) => {
      const share = publicShares.get(s.id);
      if (share === undefined) throw new InvalidArgumentError(`no public share of ${s.id}`);
      return new Uint8Array(createHash('sha256').update(share).digest());
    }),
  );
}

/** {@link epochId} from the SHA-256 of each public share, in roster order (what the log records). */
export function epochIdOfDigests(roster: ThresholdRoster, digests: readonly Uint8Array[]): Uint8Array {
  if (digests.length !== roster.sites.length) {
    throw new InvalidArgumentError(`${digests.length} public share digests for ${roster.sites.length} sites`);
  }
  const h = createHash('sha256').update(ID_DOMAIN).update(epochSeed(roster));
  for (const d of digests) h.update(d);
  return new Uint8Array(h.digest());
}

/** A public share's fingerprint: the first 16 hex digits of its SHA-256 (what ceremonies print). */
export function publicShareFingerprint(share: Uint8Array): string {
  return fingerprintOfDigest(createHash('sha256').update(share).digest());
}

/** {@link publicShareFingerprint} from the public share's SHA-256 (what a certificate carries). */
export function fingerprintOfDigest(digest: Uint8Array): string {
  return Buffer.from(digest).toString('hex').slice(0, 16);
}
