import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bytesEqual } from '../../crypto/digest/index.ts';
import { loadKemKeyPair, openSealedEnvelope, sealEnvelope, wipeKemKeyPair } from '../../crypto/kem/index.ts';
import { type PublicSigningKey, type SigningKeyPair, sign, verify } from '../../crypto/signature/index.ts';
import { readKeyFile, writeKeyFile } from '../../crypto/signature/key-file-io.ts';
import {
  assertPoly,
  assertRoster,
  defaultThreshold,
  epochIdOfDigests,
  epochSeed,
  fingerprintOfDigest,
  holds,
  packedBytes,
  packWords,
  publicShareCrp,
  publicShareFingerprint,
  type RnsPoly,
  rosterHolders,
  SiteSecret,
  saveThresholdKey,
  type ThresholdContext,
  type ThresholdKeyMaterial,
  type ThresholdRoster,
  wipe,
  wipeThresholdKey,
} from '../../crypto/threshold/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { CryptoError, InvalidArgumentError } from '../errors/index.ts';
import { memberKeyDir, publicKeyDir, type RegistryView } from '../registry/index.ts';

/**
 * The threshold key ceremony, in two steps per site, each run where the site's secrets are:
 *
 * 1. {@link dealThresholdShares}: the site draws its secret, publishes its signed public share
 *    (`<site>.tpub`) and deals one Shamir share of its secret to every roster site, each sealed to
 *    the recipient's registered ML-KEM-768 key and signed by the dealer
 *    (`<site>.to.<recipient>.tshare.env`). Its secret stays in its own folder (`<site>.tsecret`, 0600).
 * 2. {@link collectThresholdShares}, once every site has dealt: the site checks every public share's
 *    signature against the registry, opens the shares dealt to it (each must be sealed by its dealer
 *    for this roster), and writes its key file (`<site>.threshold`, 0600): its own secret and one
 *    share of every site's. The pending secret file is then erased.
 *
 * No step writes a whole secret anywhere but its owner's folder, and nothing writes the sum of
 * the secrets, which is the key no one holds.
 */

/** Domain of a public share's signature. */
export const PUBLIC_SHARE_DOMAIN = 'threshold-public-share';

/** Purpose bound into the envelope of a share: the roster's seed and the dealer. */
export function sharePurpose(roster: ThresholdRoster, dealer: string): string {
  return `threshold-share:${Buffer.from(epochSeed(roster)).toString('hex')}:${dealer}`;
}

/** File names of the ceremony (in the shared folder, `public/`, or the site's own). */
export const thresholdFiles = {
  publicShare: (site: string) => `${site}.tpub`,
  share: (dealer: string, recipient: string) => `${dealer}.to.${recipient}.tshare.env`,
  pendingSecret: (site: string) => `${site}.tsecret`,
  /** Generation 0 (the first ceremony) keeps its historical name; a re-sharing's names its generation. */
  key: (site: string, generation = 0) =>
    generation === 0 ? `${site}.threshold` : `${site}.g${generation}.threshold`,
} as const;

const PUB_MAGIC = new TextEncoder().encode('CTP2');

/**
 * A public share: its certificate, optionally followed by its packed c0. The certificate is
 * 'CTP2' ‖ roster seed (32) ‖ u8 site length ‖ site ‖ SHA-256 of c0 (32) ‖ u8 commitment length (0
 * or 32) ‖ data commitment ‖ u16 signature length ‖ signature, signed by the site
 * ({@link PUBLIC_SHARE_DOMAIN}). The certificate alone (under a kilobyte) is what every site of a
 * re-sharing reads of every other: the epoch id needs only the digests, so nobody downloads n
 * polynomials.
 */
function encodePublicShare(
  seed: Uint8Array,
  site: string,
  c0: Uint8Array,
  commitment: Uint8Array | undefined,
  key: SigningKeyPair,
): Uint8Array {
  const id = new TextEncoder().encode(site);
  const c = commitment ?? new Uint8Array(0);
  const body = new Uint8Array(4 + 32 + 1 + id.length + 32 + 1 + c.length);
  body.set(PUB_MAGIC, 0);
  body.set(seed, 4);
  body[36] = id.length;
  body.set(id, 37);
  body.set(createHash('sha256').update(c0).digest(), 37 + id.length);
  body[69 + id.length] = c.length;
  body.set(c, 70 + id.length);
  const signature = sign(key, PUBLIC_SHARE_DOMAIN, body);
  const out = new Uint8Array(body.length + 2 + signature.length + c0.length);
  out.set(body, 0);
  new DataView(out.buffer).setUint16(body.length, signature.length);
  out.set(signature, body.length + 2);
  out.set(c0, body.length + 2 + signature.length);
  return out;
}

/** What a verified public share says. */
export interface PublicShareCert {
  /** The certificate's bytes (without c0). */
  readonly cert: Uint8Array;
  /** SHA-256 of the site's packed c0 (what the epoch id binds). */
  readonly digest: Uint8Array;
  /** Commitment to the site's data contribution; undefined when the site holds no shares. */
  readonly commitment: Uint8Array | undefined;
  /** The packed c0, when the bytes carried it (checked against the digest). */
  readonly c0: Uint8Array | undefined;
}

/**
 * Parses and verifies a public share of `site` for the roster's seed: the certificate alone, or
 * followed by its packed c0, whose digest must be the certified one. `keys`: the signing keys the
 * site may have signed with (one verifying is enough).
 *
 * @throws CryptoError `PUBLIC_SHARE_INVALID` naming what is wrong.
 */
export function decodePublicShare(
  ctx: ThresholdContext,
  bytes: Uint8Array,
  seed: Uint8Array,
  site: string,
  keys: readonly PublicSigningKey[],
): PublicShareCert {
  const id = new TextEncoder().encode(site);
  const refuse = (why: string) =>
    new CryptoError('PUBLIC_SHARE_INVALID', `public share of ${site}: ${why}`, { details: { site } });
  const fixed = 70 + id.length;
  if (bytes.length < fixed + 2 || !PUB_MAGIC.every((b, i) => bytes[i] === b)) throw refuse('malformed');
  if (!bytes.subarray(4, 36).every((b, i) => b === seed[i])) throw refuse('made for another roster');
  if (bytes[36] !== id.length || !id.every((b, i) => bytes[37 + i] === b)) throw refuse('names another site');
  const commitmentLength = bytes[69 + id.length]!;
  if (commitmentLength !== 0 && commitmentLength !== 32) throw refuse('malformed commitment');
  const bodyLength = fixed + commitmentLength;
  if (bytes.length < bodyLength + 2) throw refuse('malformed');
  const sigLength = new DataView(bytes.buffer, bytes.byteOffset).getUint16(bodyLength);
  const certLength = bodyLength + 2 + sigLength;
  if (bytes.length !== certLength && bytes.length !== certLength + packedBytes(ctx))
    throw refuse('malformed');
  const body = bytes.subarray(0, bodyLength);
  if (
    !keys.some((key) => verify(key, PUBLIC_SHARE_DOMAIN, body, bytes.subarray(bodyLength + 2, certLength)))
  ) {
    throw refuse('bad signature');
  }
  const digest = bytes.slice(37 + id.length, 69 + id.length);
  let c0: Uint8Array | undefined;
  if (bytes.length > certLength) {
    c0 = bytes.slice(certLength);
    if (!bytesEqual(new Uint8Array(createHash('sha256').update(c0).digest()), digest)) {
      throw refuse('its c0 is not the certified one');
    }
  }
  return {
    cert: bytes.slice(0, certLength),
    digest,
    commitment: commitmentLength === 0 ? undefined : bytes.slice(70 + id.length, bodyLength),
    c0,
  };
}

/**
 * What the envelope from `dealer` to `recipient` seals: a Shamir share of the dealer's secret when
 * the recipient holds, the dealer's data contribution when the dealer holds. Neither: no envelope.
 */
export function envelopeContents(
  roster: ThresholdRoster,
  dealer: string,
  recipient: string,
): { readonly share: boolean; readonly contribution: boolean } {
  return { share: holds(roster, recipient), contribution: holds(roster, dealer) };
}

/** The roster sites `dealer` seals an envelope to, in roster order ({@link envelopeContents}). */
export function dealRecipients(roster: ThresholdRoster, dealer: string): string[] {
  return roster.sites
    .map((s) => s.id)
    .filter((r) => {
      const c = envelopeContents(roster, dealer, r);
      return c.share || c.contribution;
    });
}

/** What one site needs to deal. */
export interface DealInput {
  readonly site: string;
  readonly roster: ThresholdRoster;
  readonly ctx: ThresholdContext;
  /** The site's own signing key pair (it seals its shares and signs its public share). */
  readonly signingKey: SigningKeyPair;
  /** Every roster site's ML-KEM-768 public key, as the registry lists it. */
  readonly kemKeys: (site: string) => Uint8Array | undefined;
}

/** What {@link makeDeal} made: the secret (stays with its owner) and what is published. */
export interface Deal {
  /** The site's fresh secret, NTT form: the caller keeps it owner-only, then wipes it. */
  readonly secret: RnsPoly;
  /** The signed public share: its certificate followed by its packed c0 (the `.tpub` file's bytes). */
  readonly publicShare: Uint8Array;
  /** One envelope per recipient of {@link dealRecipients}, in roster order. */
  readonly envelopes: readonly { readonly recipient: string; readonly envelope: Uint8Array }[];
  /** Fingerprint of the public share (what a ceremony prints). */
  readonly fingerprint: string;
}

/**
 * Refusals of an envelope whose dealer's signature verified: its KEM ciphertext does not open, its
 * secret is not the stated one, or what it seals is not a share and a contribution of the roster.
 * A store (or coordinator) that alters an envelope breaks the signature instead.
 */
const DEALER_FAULTS = new Set(['UNWRAP_FAILED', 'KEY_FINGERPRINT_MISMATCH', 'KEY_INVALID']);

/** Bytes of a dealer's share of the epoch data key, sealed in each envelope after the Shamir share. */
export const DATA_CONTRIBUTION_BYTES = 32;

const COMMITMENT_DOMAIN = 'cohort/v1/epoch-data-commitment\0';
const EPOCH_DATA_KEY_INFO = 'cohort/v1/epoch-data-key';

/** The commitment a holder's public share carries to its data contribution (SHA-256, domain-separated). */
export function dataCommitment(
  roster: ThresholdRoster,
  dealer: string,
  contribution: Uint8Array,
): Uint8Array {
  return new Uint8Array(
    createHash('sha256')
      .update(COMMITMENT_DOMAIN)
      .update(epochSeed(roster))
      .update(`${dealer}\0`)
      .update(contribution)
      .digest(),
  );
}

/**
 * The data key of a re-shared epoch: HKDF-SHA-256 over every holder's data contribution in
 * roster order, salted with the epoch id. Each holder seals its contribution to every roster site,
 * so only the roster's sites can compute it: a revoked site, the coordinator and the aggregators
 * cannot.
 */
export function epochDataKey(epochId: Uint8Array, contributions: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', Buffer.concat(contributions), epochId, EPOCH_DATA_KEY_INFO, 32));
}

const KEY_CONFIRMATION_DOMAIN = 'cohort/v1/epoch-key-confirmation\0';

/**
 * The key confirmation a ready carries: HMAC-SHA-256 of the epoch id under the epoch's data key.
 * Every roster site's must be the same, so that no site switches to an epoch whose sites derived
 * different data keys (found at the ready, not later as share bundles that do not open). It says
 * nothing of the key.
 */
export function dataKeyConfirmation(dataKey: Uint8Array, epochId: Uint8Array): Uint8Array {
  return new Uint8Array(
    createHmac('sha256', dataKey).update(KEY_CONFIRMATION_DOMAIN).update(epochId).digest(),
  );
}

/**
 * One site's deal for a roster: draws its secret, signs its public share and seals one Shamir
 * share of the secret to every holder (itself included when it holds) and, when it holds, its data
 * contribution to every roster site ({@link envelopeContents}), each under the recipient's
 * registered ML-KEM-768 key, signed by the dealer and bound to the roster's seed (which binds its
 * generation). The shares are wiped once sealed. Dealing is linear in the roster: one share per
 * holder, one contribution per site.
 */
export function makeDeal(input: DealInput): Deal {
  const { site, roster, ctx } = input;
  if (!roster.sites.some((s) => s.id === site))
    throw new InvalidArgumentError(`${site} is not in the threshold roster`);
  const seed = epochSeed(roster);
  const secret = SiteSecret.generate(ctx);
  const contributes = holds(roster, site);
  const contribution = new Uint8Array(randomBytes(DATA_CONTRIBUTION_BYTES));
  const holderSites = rosterHolders(roster);
  try {
    const c0 = packWords(ctx, secret.publicShare(publicShareCrp(ctx, roster)));
    const shares = new Map(
      secret
        .deal(
          roster.threshold,
          holderSites.map((s) => s.point),
        )
        .map((share, k) => [holderSites[k]!.id, share] as const),
    );
    const maker = { id: site, key: input.signingKey };
    try {
      const envelopes = dealRecipients(roster, site).map((recipient) => {
        const kem = input.kemKeys(recipient);
        if (kem === undefined)
          throw new InvalidArgumentError(`no ML-KEM-768 key registered for ${recipient}`);
        const share = shares.get(recipient);
        const shareBytes =
          share === undefined
            ? new Uint8Array(0)
            : new Uint8Array(share.buffer, share.byteOffset, share.byteLength);
        const bytes = new Uint8Array(shareBytes.length + (contributes ? DATA_CONTRIBUTION_BYTES : 0));
        bytes.set(shareBytes, 0);
        if (contributes) bytes.set(contribution, shareBytes.length);
        try {
          return {
            recipient,
            envelope: sealEnvelope(maker, kem, bytes, {
              federation: roster.federation,
              recipient,
              purpose: sharePurpose(roster, site),
            }),
          };
        } finally {
          bytes.fill(0);
        }
      });
      return {
        secret: secret.exportWords(),
        publicShare: encodePublicShare(
          seed,
          site,
          c0,
          contributes ? dataCommitment(roster, site, contribution) : undefined,
          input.signingKey,
        ),
        envelopes,
        fingerprint: publicShareFingerprint(c0),
      };
    } finally {
      for (const share of shares.values()) wipe(share);
    }
  } finally {
    secret.wipe();
    contribution.fill(0);
  }
}

/**
 * Step 1 for one site, through files: {@link makeDeal}, then its secret to its own folder
 * (`<site>.tsecret`, 0600), its public share and envelopes to the shared folder. Returns the
 * fingerprint of its public share (what the ceremony prints and the other sites can compare out
 * of band).
 */
export function dealThresholdShares(input: DealInput & { readonly dir: string }): string {
  const { dir, site, roster } = input;
  const deal = makeDeal(input);
  try {
    writeKeyFile(
      join(memberKeyDir(dir, site), thresholdFiles.pendingSecret(site)),
      pendingBytes(epochSeed(roster), deal.secret),
      true,
    );
    writeKeyFile(join(publicKeyDir(dir), thresholdFiles.publicShare(site)), deal.publicShare, false);
    for (const { recipient, envelope } of deal.envelopes) {
      writeKeyFile(join(publicKeyDir(dir), thresholdFiles.share(site, recipient)), envelope, false);
    }
    return deal.fingerprint;
  } finally {
    wipe(deal.secret);
  }
}

function pendingBytes(seed: Uint8Array, words: RnsPoly): Uint8Array {
  const out = new Uint8Array(32 + words.byteLength);
  out.set(seed, 0);
  out.set(new Uint8Array(words.buffer, words.byteOffset, words.byteLength), 32);
  return out;
}

/** What {@link assembleEpoch} needs: the roster, the site's own secret and keys, and every deal's parts. */
export interface AssembleInput {
  readonly site: string;
  readonly roster: ThresholdRoster;
  readonly ctx: ThresholdContext;
  /** The registry as the site trusts it: dealers' signing keys. */
  readonly registry: RegistryView;
  /**
   * The site's own secret of this roster (NTT form; copied, not wiped here), read only once every
   * public share has verified.
   */
  readonly secret: () => RnsPoly;
  /** The site's ML-KEM-768 secret key (not wiped here), read after the secret. */
  readonly kemSecretKey: () => Uint8Array;
  /**
   * A roster site's public share (its certificate, with or without c0), and what to call it in
   * an error. Read for every roster site (the epoch id binds each digest).
   */
  readonly publicShareOf: (dealer: string) => { readonly bytes: Uint8Array; readonly name: string };
  /**
   * The envelope `dealer` sealed to this site, and what to call it in an error: asked only of the
   * dealers that seal one to it ({@link envelopeContents}).
   */
  readonly envelopeOf: (dealer: string) => { readonly bytes: Uint8Array; readonly name: string };
}

/**
 * Checks every roster site's public share against the registry (its current signing key), opens
 * the envelope each dealer sealed to `site` (only the dealer itself may have sealed a share of its
 * own secret, for this roster's seed; each holder's data contribution must be the one its public
 * share commits to) and returns the site's key material (shares only when it holds), the epoch
 * id, every public share's digest and the epoch's data key. Wipe the material and key when done.
 *
 * @throws CryptoError `PUBLIC_SHARE_INVALID`, the envelope's refusals (`ENVELOPE_*`,
 *   `UNWRAP_FAILED`), `KEY_INVALID` for a share that is not a polynomial of the parameters or a
 *   contribution that is not the committed one.
 */
export function assembleEpoch(input: AssembleInput): {
  readonly material: ThresholdKeyMaterial;
  readonly epochId: Uint8Array;
  /** SHA-256 of each roster site's packed c0, in roster order. */
  readonly digests: readonly Uint8Array[];
  /** The epoch's data key ({@link epochDataKey}); wipe it after use. */
  readonly dataKey: Uint8Array;
} {
  const { site, roster, ctx, registry } = input;
  if (!roster.sites.some((s) => s.id === site))
    throw new InvalidArgumentError(`${site} is not in the threshold roster`);
  const seed = epochSeed(roster);
  const keyOf = (id: string) => {
    const m = registry.member(id);
    if (m === undefined || m.role !== 'site' || m.revokedFrom !== undefined) {
      throw new CryptoError('PUBLIC_SHARE_INVALID', `${id} is not a registered, unrevoked site`, {
        details: { site: id },
      });
    }
    return m.epochs[m.epochs.length - 1]!.signingKey;
  };
  const certs = new Map<string, PublicShareCert>();
  for (const s of roster.sites) {
    const { bytes, name } = input.publicShareOf(s.id);
    try {
      certs.set(s.id, decodePublicShare(ctx, bytes, seed, s.id, [keyOf(s.id)]));
    } catch (cause) {
      throw new CryptoError('PUBLIC_SHARE_INVALID', `${name}: ${(cause as Error).message}`, {
        cause,
        details: { site: s.id },
      });
    }
  }
  const digests = roster.sites.map((s) => certs.get(s.id)!.digest);
  const id = epochIdOfDigests(roster, digests);
  const holder = holds(roster, site);
  const shares = new Map<string, RnsPoly>();
  const contributions: Uint8Array[] = [];
  let secret: RnsPoly | undefined;
  try {
    secret = input.secret().slice();
    const kemSecretKey = input.kemSecretKey();
    for (const dealer of roster.sites) {
      const expected = envelopeContents(roster, dealer.id, site);
      if (!expected.share && !expected.contribution) continue;
      const { bytes, name } = input.envelopeOf(dealer.id);
      try {
        const opened = openSealedEnvelope(
          kemSecretKey,
          bytes,
          { federation: roster.federation, recipient: site, purpose: sharePurpose(roster, dealer.id) },
          {
            // Only the dealer itself may seal a share of its own secret.
            makers: (maker, keyId) => {
              if (maker !== dealer.id) return `a share of ${dealer.id}'s secret sealed by ${maker}`;
              const key = keyOf(maker);
              return key.keyId === keyId ? key : `key ${keyId} is not ${maker}'s current signing key`;
            },
          },
        );
        try {
          const shareBytes = expected.share ? ctx.polyBytes : 0;
          const want = shareBytes + (expected.contribution ? DATA_CONTRIBUTION_BYTES : 0);
          if (opened.secret.length !== want) {
            throw new CryptoError(
              'KEY_INVALID',
              `${name}: ${opened.secret.length} bytes sealed, ${want} expected`,
            );
          }
          if (expected.contribution) {
            const contribution = opened.secret.slice(shareBytes);
            const committed = certs.get(dealer.id)!.commitment;
            if (
              committed === undefined ||
              !bytesEqual(committed, dataCommitment(roster, dealer.id, contribution))
            ) {
              contribution.fill(0);
              throw new CryptoError(
                'KEY_INVALID',
                `${name}: its data contribution is not the one ${dealer.id} committed to in its public share`,
              );
            }
            contributions.push(contribution);
          }
          if (expected.share) {
            const share = new BigUint64Array(opened.secret.slice(0, shareBytes).buffer);
            shares.set(dealer.id, share);
            try {
              assertPoly(ctx, share, `share of ${dealer.id}`);
            } catch (cause) {
              throw new CryptoError('KEY_INVALID', `${name}: the share is out of range`, { cause });
            }
          }
        } finally {
          opened.secret.fill(0);
        }
      } catch (err) {
        // Past the dealer's signature, what the envelope holds is the dealer's doing: named, so
        // that the site can complain about that dealer rather than be left out for it.
        if (err instanceof CryptoError && DEALER_FAULTS.has(err.code)) {
          throw new CryptoError('DEAL_INVALID', `the deal of ${dealer.id}: ${err.message}`, {
            cause: err,
            details: { dealer: dealer.id },
          });
        }
        throw err;
      }
    }
    if (holder !== (shares.size === roster.sites.length)) {
      throw new CryptoError(
        'KEY_INVALID',
        `${site} got ${shares.size} shares of ${roster.sites.length} sites`,
      );
    }
    const material: ThresholdKeyMaterial = { roster, epochId: id, self: site, secret, shares };
    return { material, epochId: id, digests, dataKey: epochDataKey(id, contributions) };
  } catch (err) {
    for (const s of shares.values()) wipe(s);
    if (secret !== undefined) wipe(secret);
    throw err;
  } finally {
    for (const c of contributions) c.fill(0);
  }
}

/** What one site needs to collect. */
export interface CollectInput {
  readonly dir: string;
  readonly site: string;
  readonly roster: ThresholdRoster;
  readonly ctx: ThresholdContext;
  /** The registry as the site trusts it: dealers' signing keys. */
  readonly registry: RegistryView;
}

/** What {@link collectThresholdShares} established. */
export interface CollectedEpoch {
  readonly epochId: Uint8Array;
  /** Fingerprint of every roster site's public share, in roster order. */
  readonly publicShares: readonly { readonly site: string; readonly fingerprint: string }[];
  /** The key file written. */
  readonly keyFile: string;
}

/**
 * Step 2 for one site, through files: {@link assembleEpoch} from the shared folder, then its key
 * file (`<site>.threshold`, 0600); the pending secret file is erased.
 *
 * @throws CryptoError as {@link assembleEpoch}, naming the file; `KEY_INVALID` for a pending
 *   secret that is not this roster's.
 */
export function collectThresholdShares(input: CollectInput): CollectedEpoch {
  const { dir, site, roster, ctx } = input;
  if (!roster.sites.some((s) => s.id === site))
    throw new InvalidArgumentError(`${site} is not in the threshold roster`);
  const seed = epochSeed(roster);
  const own = memberKeyDir(dir, site);
  const pendingPath = join(own, thresholdFiles.pendingSecret(site));
  let pending: Uint8Array | undefined;
  let secret: RnsPoly | undefined;
  let kem: ReturnType<typeof loadKemKeyPair> | undefined;
  try {
    const readSecret = () => {
      pending = readKeyFile(pendingPath, true);
      if (pending.length !== 32 + ctx.polyBytes || !pending.subarray(0, 32).every((b, i) => b === seed[i])) {
        throw new CryptoError('KEY_INVALID', `${pendingPath} is not this roster's pending secret`);
      }
      secret = new BigUint64Array(
        pending.buffer.slice(pending.byteOffset + 32, pending.byteOffset + pending.length),
      );
      return secret;
    };
    const file = (name: string) => {
      const path = join(publicKeyDir(dir), name);
      return { bytes: readFileSync(path), name: path };
    };
    const { material, digests, dataKey } = assembleEpoch({
      ...input,
      secret: readSecret,
      kemSecretKey: () => {
        kem = loadKemKeyPair(join(own, `${site}.kem`));
        return kem.secretKey;
      },
      publicShareOf: (dealer) => file(thresholdFiles.publicShare(dealer)),
      envelopeOf: (dealer) => file(thresholdFiles.share(dealer, site)),
    });
    // The key ceremony's epoch keeps the federation data key (data.env): this one is not used.
    dataKey.fill(0);
    const keyFile = join(own, thresholdFiles.key(site, roster.generation));
    try {
      saveThresholdKey(ctx, keyFile, material);
    } finally {
      wipeThresholdKey(material);
    }
    erase(pendingPath, pending!.length);
    return {
      epochId: material.epochId,
      publicShares: roster.sites.map((s, k) => ({
        site: s.id,
        fingerprint: fingerprintOfDigest(digests[k]!),
      })),
      keyFile,
    };
  } finally {
    pending?.fill(0);
    if (secret !== undefined) wipe(secret);
    if (kem !== undefined) wipeKemKeyPair(kem);
  }
}

/** Overwrites a secret file with zeros, then removes it. */
function erase(path: string, length: number): void {
  if (!existsSync(path)) return;
  writeKeyFile(path, new Uint8Array(length), true);
  rmSync(path);
}

/** Name of the epoch file in the shared folder. */
export const THRESHOLD_EPOCH_FILE = 'threshold.epoch.json';

/** A key epoch as every member loads it: the roster and the id that binds its public shares. */
export interface ThresholdEpoch {
  readonly roster: ThresholdRoster;
  readonly epochId: Uint8Array;
}

/**
 * Writes the epoch file (`public/threshold.epoch.json`): the roster (federation, parameters,
 * threshold, each site's point) and the epoch id. Public: it holds no secret.
 */
export function writeThresholdEpoch(dir: string, epoch: ThresholdEpoch): string {
  const path = join(publicKeyDir(dir), THRESHOLD_EPOCH_FILE);
  const body = {
    federation: epoch.roster.federation,
    paramsId: Buffer.from(epoch.roster.paramsId).toString('hex'),
    threshold: epoch.roster.threshold,
    generation: epoch.roster.generation,
    sites: epoch.roster.sites.map((s) => ({ id: s.id, point: s.point })),
    ...(epoch.roster.holders === undefined ? {} : { holders: epoch.roster.holders }),
    epochId: Buffer.from(epoch.epochId).toString('hex'),
  };
  writeKeyFile(path, new TextEncoder().encode(`${JSON.stringify(body, null, 2)}\n`), false);
  return path;
}

/**
 * Loads the epoch file and checks it: the roster is well formed and for `federation` and the
 * context's parameters, every site's public share verifies against the registry, and the epoch id
 * recomputed from them is the file's and, when given, `pin` (the configuration's
 * `members.keyFingerprints.threshold`).
 *
 * @throws CryptoError `THRESHOLD_EPOCH_INVALID` naming what does not hold; `PUBLIC_SHARE_INVALID`.
 */
export function loadThresholdEpoch(input: {
  readonly dir: string;
  readonly federation: string;
  readonly ctx: ThresholdContext;
  readonly registry: RegistryView;
  readonly pin?: string;
}): ThresholdEpoch {
  const { dir, ctx, registry } = input;
  const path = join(publicKeyDir(dir), THRESHOLD_EPOCH_FILE);
  const refuse = (why: string, cause?: unknown) =>
    new CryptoError('THRESHOLD_EPOCH_INVALID', `${path}: ${why}`, { cause, details: { path } });
  let body: {
    federation?: unknown;
    paramsId?: unknown;
    threshold?: unknown;
    generation?: unknown;
    sites?: unknown;
    holders?: unknown;
    epochId?: unknown;
  };
  try {
    const text = readFileSync(path, 'utf8');
    if (text.length > 1 << 20) throw refuse('larger than 1 MiB');
    body = JSON.parse(text);
  } catch (cause) {
    throw refuse('cannot be read as JSON', cause);
  }
  const hex = (v: unknown, name: string) => {
    if (typeof v !== 'string' || !/^[0-9a-f]{64}$/.test(v)) throw refuse(`${name} must be 64 hex digits`);
    return new Uint8Array(Buffer.from(v, 'hex'));
  };
  if (body.federation !== input.federation) {
    throw refuse(`is for federation ${JSON.stringify(body.federation)}, not ${input.federation}`);
  }
  if (!Array.isArray(body.sites)) throw refuse('sites must be a list');
  const roster: ThresholdRoster = {
    federation: input.federation,
    paramsId: hex(body.paramsId, 'paramsId'),
    threshold: Number(body.threshold),
    generation: Number(body.generation),
    sites: (body.sites as { id?: unknown; point?: unknown }[]).map((s) => ({
      id: String(s?.id),
      point: Number(s?.point),
    })),
    ...(body.holders === undefined
      ? {}
      : { holders: Array.isArray(body.holders) ? body.holders.map(String) : [String(body.holders)] }),
  };
  try {
    assertRoster(roster);
  } catch (cause) {
    throw refuse((cause as Error).message, cause);
  }
  if (!roster.paramsId.every((b, i) => b === ctx.paramsId[i]))
    throw refuse('is for other threshold parameters');
  const seed = epochSeed(roster);
  const digests: Uint8Array[] = [];
  for (const s of roster.sites) {
    const m = registry.member(s.id);
    if (m === undefined || m.role !== 'site') {
      throw new CryptoError('PUBLIC_SHARE_INVALID', `${s.id} is not a registered site`, {
        details: { site: s.id },
      });
    }
    const file = join(publicKeyDir(dir), thresholdFiles.publicShare(s.id));
    digests.push(
      // Any key the site has held: a rotation after the ceremony does not unmake its public share,
      // which the epoch id (pinned in the configuration) binds anyway.
      decodePublicShare(
        ctx,
        readFileSync(file),
        seed,
        s.id,
        m.epochs.map((e) => e.signingKey),
      ).digest,
    );
  }
  const id = epochIdOfDigests(roster, digests);
  const stated = hex(body.epochId, 'epochId');
  if (!id.every((b, i) => b === stated[i]))
    throw refuse('its epoch id is not the one its public shares give');
  if (input.pin !== undefined && Buffer.from(id).toString('hex') !== input.pin) {
    throw refuse(
      `epoch ${Buffer.from(id).toString('hex')} is not the one the configuration pins (${input.pin})`,
    );
  }
  return { roster, epochId: id };
}

/**
 * The largest share bundle a round of `updateLength` lanes can bring: one packed share per block
 * (at most one block per `slots` lanes, plus four for the integrity and statistics lanes), the context naming up to `maxContributors`
 * contributors and every roster site, and a signature. What the coordinator caps a bundle at
 * before it reassembles one.
 */
export function maxShareBundleBytesFor(
  lanes: { readonly slots: number; readonly maxCiphertextBytes: number },
  updateLength: number,
  maxContributors: number,
  rosterSites: number,
): number {
  const blocks = Math.ceil(updateLength / lanes.slots) + 4;
  // Each id: a u32 length, up to 128 bytes, and a point.
  const ids = (maxContributors + rosterSites) * (4 + 128 + 4);
  return blocks * lanes.maxCiphertextBytes + ids + 64 * 1024;
}

/**
 * The lowest threshold a key epoch of this federation may have: `crypto.threshold.sites` when
 * set, else ⌈2n/3⌉ (at least `round.minContributors`, at most n) of the n key holders
 * (`crypto.threshold.holders`, else the configured sites) the registry lists as enrolled and
 * unrevoked — whether or not they are live. A re-sharing among fewer sites keeps this threshold
 * (or is not made), so that no coordinator can lower it by leaving sites out of a roster.
 */
export function policyThreshold(
  config: Pick<CohortConfig, 'crypto' | 'round'> & { readonly members?: CohortConfig['members'] },
  /** Whether the registry lists `id` as an enrolled, unrevoked site. */
  enrolled: (id: string) => boolean,
): number {
  const { holders, sites: threshold } = config.crypto.threshold;
  if (threshold !== undefined) return threshold;
  const n = (holders ?? config.members?.sites.map((s) => s.id) ?? []).filter(enrolled).length;
  return defaultThreshold(Math.max(n, 1), config.round.minContributors);
}

/**
 * Whether a roster's holders are the ones the configuration allows: with `crypto.threshold.holders`
 * set, exactly the configured holders among the roster's sites; unset, every roster site. A
 * coordinator cannot move the decryption committee onto sites of its choosing.
 */
export function holdersProblem(
  roster: ThresholdRoster,
  configured: readonly string[] | undefined,
): string | undefined {
  const expected =
    configured === undefined
      ? roster.sites.map((s) => s.id)
      : roster.sites.map((s) => s.id).filter((id) => configured.includes(id));
  const actual = rosterHolders(roster).map((s) => s.id);
  if (expected.length === actual.length && expected.every((id, k) => actual[k] === id)) return undefined;
  return `its holders [${actual.join(', ')}] are not the configured ones among its sites [${expected.join(', ')}]`;
}

/**
 * The key epoch's roster as every member computes it from the federation's configuration and its
 * registry, so that no roster file has to be trusted: the configuration's sites (`members.sites`,
 * in order) that the registry lists as unrevoked sites, each at point k + 1 by that order, and
 * t = `crypto.threshold.sites` or ⌈2n/3⌉, at least `round.minContributors` (never more than n).
 *
 * @throws InvalidArgumentError when fewer sites than t (or none) are enrolled.
 */
export function thresholdRosterOf(input: {
  readonly federation: string;
  readonly paramsId: Uint8Array;
  /** The configuration's sites, in order. */
  readonly sites: readonly string[];
  /** Whether the registry lists `id` as an unrevoked site. */
  readonly enrolled: (id: string) => boolean;
  /** `crypto.threshold.sites`, when set. */
  readonly threshold?: number | undefined;
  /** `crypto.threshold.holders`, when set: the key holders among the sites (else every site holds). */
  readonly holders?: readonly string[] | undefined;
  readonly minContributors: number;
  /** The epoch's generation (0 for the first ceremony; see {@link ThresholdRoster.generation}). */
  readonly generation?: number;
}): ThresholdRoster {
  const sites = input.sites.filter((id) => input.enrolled(id));
  if (sites.length === 0) throw new InvalidArgumentError('no enrolled site to make a threshold roster of');
  const holders = input.holders === undefined ? sites : sites.filter((id) => input.holders!.includes(id));
  const threshold = input.threshold ?? defaultThreshold(holders.length, input.minContributors);
  if (threshold > holders.length) {
    throw new InvalidArgumentError(
      `crypto.threshold.sites ${threshold} is more than the ${holders.length} enrolled key holder(s)`,
    );
  }
  const roster: ThresholdRoster = {
    federation: input.federation,
    paramsId: input.paramsId,
    threshold,
    generation: input.generation ?? 0,
    sites: sites.map((id, k) => ({ id, point: k + 1 })),
    ...(holders.length === sites.length ? {} : { holders }),
  };
  assertRoster(roster);
  return roster;
}
