import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { CkksContext, CkksKeyset, PlainLaneContext, PlainLaneKeyset } from '../../crypto/ckks/index.ts';
import {
  type EnvelopeMaker,
  generateKemKeyPair,
  loadKemKeyPair,
  loadKemPublicKey,
  openSealedEnvelope,
  readSealedEnvelope,
  SEALED_ENVELOPE_MAGIC,
  saveKemKeyPair,
  saveKemPublicKey,
  sealEnvelope,
  secretFingerprint,
  unwrapSecret,
  wipeKemKeyPair,
} from '../../crypto/kem/index.ts';
import type { LaneContext, LaneKeyset } from '../../crypto/lanes/index.ts';
import {
  generateSigningKeyPair,
  loadSigningKeyPair,
  type SignatureAlgorithm,
  type SigningKeyPair,
  savePublicKey,
  saveSigningKeyPair,
  toPublicSigningKey,
  wipeSigningKeyPair,
} from '../../crypto/signature/index.ts';
import { holds, type ThresholdContext, ThresholdLaneContext } from '../../crypto/threshold/index.ts';
import { CryptoError, InvalidArgumentError } from '../errors/index.ts';
import {
  assertMemberId,
  loadRegistry,
  type MemberRegistry,
  memberKeyDir,
  memberSigningKeyFile,
  PUBLIC_KEY_DIR,
  publicFile,
  publicKeyDir,
  REGISTRY_FILE,
  type RegistryPin,
  type RegistryRole,
  RegistryView,
  registryFromPublicFiles,
  signRegistry,
  writeRegistry,
} from '../registry/index.ts';
import {
  federationAuthorization,
  federationUsers,
  type NatsServerTlsFiles,
  type NatsUser,
} from '../transport/index.ts';
import { DATA_KEY_BYTES } from '../versions/snapshot-cipher.ts';
import { CKKS_KEY_PURPOSE, DATA_KEY_PURPOSE, type EnvelopeTrust } from './envelope-trust.ts';
import {
  createFederationTls,
  generateMemberNatsKeys,
  issueMemberCertificate,
  memberNatsPaths,
} from './nats-credentials.ts';
import { openSiteThreshold } from './site-threshold.ts';
import {
  type CollectedEpoch,
  collectThresholdShares,
  dealThresholdShares,
  type ThresholdEpoch,
  thresholdRosterOf,
  writeThresholdEpoch,
} from './threshold-dealing.ts';

export {
  CKKS_KEY_PURPOSE,
  DATA_KEY_PURPOSE,
  type EnvelopeTrust,
  envelopeTrust,
  registryEnvelopeMakers,
} from './envelope-trust.ts';

/** What the ceremony is run for. */
export interface CeremonyInput {
  /**
   * The keys folder (created): `<id>/` per member (0700, secrets 0600), `public/` (public files,
   * envelopes, `ca.crt`, `registry.bin`), `officer/` (the registry officer's key, 0700).
   */
  readonly dir: string;
  readonly federation: string;
  readonly coordinator: string;
  readonly aggregators: readonly string[];
  readonly sites: readonly string[];
  /** Read-only members (they read the log); default none. */
  readonly auditors?: readonly string[];
  /**
   * Sites of the configuration not enrolled yet: they get their NATS credentials (they are users
   * of nats-server) but no signing or KEM key, no envelope, and no registry entry; enroll them
   * later ({@link enrollSite}, `cohort registry enroll`). Default none.
   */
  readonly unenrolled?: readonly string[];
  /** The site that creates the CKKS secret key and the data key and wraps them (default: the first site). */
  readonly keySite?: string;
  readonly algorithm: SignatureAlgorithm;
  readonly ckks: CkksContext;
  /**
   * Threshold keys (`crypto.keys: threshold`): no CKKS secret key is made; every enrolled site
   * draws its own secret and deals Shamir shares of it to the others (`threshold-dealing.ts`),
   * `sites` of them (default ⌈2n/3⌉ of the holders, at least `minContributors`) decrypt together.
   */
  readonly threshold?: {
    readonly ctx: ThresholdContext;
    readonly sites?: number;
    /** `crypto.threshold.holders`: the key holders (default: every site). */
    readonly holders?: readonly string[];
    readonly minContributors: number;
  };
  /**
   * Folder of the operator's TLS secrets (`ca.key.pem`, `server.crt`, `server.key.pem`, and
   * `ca.crt`); default `<dir>/operator` (0700). `ca.crt` is copied to `<dir>/public` for the members.
   */
  readonly tlsDir?: string;
  /** Hosts (IPs, DNS names) nats-server's certificate names; default 127.0.0.1 and localhost. */
  readonly natsHosts?: readonly string[];
  /**
   * Signing key pairs of `algorithm` made beforehand (e.g. in worker threads: `generateSigningKeyPairs`),
   * taken by members in the order `coordinator`, aggregators, sites, auditors, each once; a member
   * left without one gets a fresh pair. The ceremony wipes every pair it takes.
   */
  readonly signingKeys?: SigningKeyPair[];
}

/** What {@link runKeyCeremony} hands the operator of nats-server. */
export interface CeremonyResult {
  /** The NKEY users of every member with their permissions. */
  readonly users: NatsUser[];
  /** {@link users} as a nats-server `authorization` block. */
  readonly authorization: string;
  /** nats-server's TLS files (certificate, key, federation CA). */
  readonly tls: NatsServerTlsFiles;
  /** The signed member registry (`<dir>/public/registry.bin`) and its SHA-256: the config's `members.registry`. */
  readonly registry: RegistryPin;
  /** The registry officer's key pair file (`<dir>/officer/officer.key`, 0600) and its public key. */
  readonly officer: { readonly key: string; readonly pub: string };
  /**
   * Fingerprints of the CKKS secret key and the data key (`secretFingerprint`): the config's
   * `members.keyFingerprints`, which every site checks its envelopes against.
   */
  readonly keyFingerprints: {
    /** Of the shared CKKS secret key; absent with threshold keys (there is none). */
    readonly ckks?: string;
    readonly data: string;
    /** With threshold keys: the key epoch's id (hex), which binds the roster and the public shares. */
    readonly threshold?: string;
  };
  /**
   * With threshold keys: the epoch (id, threshold, each site's point) and each site's public share
   * fingerprint (what every member checks the epoch against; the demo prints them).
   */
  readonly threshold?: {
    readonly epochId: string;
    readonly threshold: number;
    readonly publicShares: readonly {
      readonly site: string;
      readonly point: number;
      readonly fingerprint: string;
      /** Whether the site is a key holder (every site when no holders are configured). */
      readonly holds: boolean;
    }[];
  };
}

/** Folder mode of a member's own keys folder: owner only. */
const OWN_DIR_MODE = 0o700;

/** Creates `path` (and parents) and forces `mode` on it. */
function makeDir(path: string, mode: number): string {
  mkdirSync(path, { recursive: true, mode });
  chmodSync(path, mode);
  return path;
}

/** Copies a public file into the shared folder (0644): what a member hands over. */
function handOver(file: string, publicDir: string): void {
  const to = join(publicDir, basename(file));
  copyFileSync(file, to);
  chmodSync(to, 0o644);
}

/**
 * The key ceremony of a whole federation on one machine (the demo and tests), laid out as the
 * by-hand ceremony of docs/key-ceremony.md leaves it, each member's secrets in its own folder:
 *
 * 1. each member, in `<dir>/<id>/` (0700): its signing key pair `<id>.key` (0600) + `<id>.pub`,
 *    a site its ML-KEM-768 pair `<id>.kem` (0600) + `<id>.kem.pub`, and its NATS credentials
 *    (`<id>.nk` and `<id>.tls.key` 0600, `<id>.nk.pub`, `<id>.tls.pub`; see `nats-credentials.ts`);
 *    it hands over only the public files, copied to `<dir>/public/`;
 * 2. the operator creates the federation CA and nats-server's certificate in `tlsDir`, certifies
 *    each member's TLS key (`<dir>/<id>/<id>.tls.crt`) and publishes `ca.crt` in `<dir>/public/`;
 * 3. the registry officer (`<dir>/officer/officer.key`) builds the member registry from the public
 *    files and signs it: `<dir>/public/registry.bin`, pinned by its SHA-256;
 * 4. one site (`keySite`, default the first) creates the CKKS secret key and the federation data
 *    key (32 random bytes) and wraps both for each site's ML-KEM-768 key as the signed registry
 *    lists it, sealing each envelope with its own registered signing key (`sealEnvelope`):
 *    `<dir>/public/<site>.ckks.env` and `<site>.data.env` (purposes {@link CKKS_KEY_PURPOSE},
 *    {@link DATA_KEY_PURPOSE}; 0600). Neither secret is ever written in the clear; both are wiped
 *    before returning, and their fingerprints returned for the configuration to pin.
 *
 * No password is written anywhere: members authenticate with their NKEY over mutual TLS.
 * Returns the NATS users (every member's, the `unenrolled` ones' included: they are configured
 * and get keys later), their `authorization` block, nats-server's TLS files, the registry pin, the
 * officer's key files and the secrets' fingerprints.
 */
export function runKeyCeremony(input: CeremonyInput): CeremonyResult {
  const unenrolled = new Set(input.unenrolled ?? []);
  const all = [input.coordinator, ...input.aggregators, ...input.sites, ...(input.auditors ?? [])];
  for (const id of [...all, ...unenrolled]) assertMemberId(id);
  for (const id of unenrolled) {
    if (!input.sites.includes(id)) throw new InvalidArgumentError(`unenrolled ${id} is not one of the sites`);
  }
  makeDir(input.dir, 0o755);
  const publicDir = makeDir(join(input.dir, PUBLIC_KEY_DIR), 0o755);
  const tlsDir = makeDir(input.tlsDir ?? join(input.dir, 'operator'), OWN_DIR_MODE);
  const { ca, server } = createFederationTls(tlsDir, {
    hosts: input.natsHosts ?? ['127.0.0.1', 'localhost'],
    overwrite: true,
  });
  handOver(server.ca, publicDir);

  // 1 + 2: every member's own keys; the operator certifies its TLS key.
  const roles = new Map<string, RegistryRole>();
  const nats = (id: string, role: RegistryRole) => {
    roles.set(id, role);
    const own = makeDir(join(input.dir, id), OWN_DIR_MODE);
    const { nkey, tlsPublicKeyPem } = generateMemberNatsKeys(own, id, true);
    const paths = memberNatsPaths(own, id);
    issueMemberCertificate(ca, id, tlsPublicKeyPem, paths.tlsCert);
    handOver(paths.nkey, publicDir);
    handOver(paths.tlsPublicKey, publicDir);
    if (!unenrolled.has(id))
      generateMemberKeys(own, id, role, input.algorithm, publicDir, input.signingKeys?.shift());
    return { id, nkey };
  };
  const coordinator = nats(input.coordinator, 'coordinator');
  const aggregators = input.aggregators.map((id) => nats(id, 'aggregator'));
  const sites = input.sites.map((id) => nats(id, 'site'));
  const auditors = (input.auditors ?? []).map((id) => nats(id, 'auditor'));

  // 3: the officer builds and signs the registry from the handed-over public files.
  const officerDir = makeDir(join(input.dir, 'officer'), OWN_DIR_MODE);
  const officer = { key: join(officerDir, 'officer.key'), pub: join(officerDir, 'officer.pub') };
  const officerKey = generateSigningKeyPair(input.algorithm);
  let pin: RegistryPin;
  try {
    saveSigningKeyPair(officer.key, officerKey);
    savePublicKey(officer.pub, officerKey);
    const registry = registryFromPublicFiles({
      federation: input.federation,
      members: all.filter((id) => !unenrolled.has(id)).map((id) => ({ id, role: roles.get(id)! })),
      dir: publicDir,
      officerKey: toPublicSigningKey(officerKey),
    });
    pin = writeRegistry(join(publicDir, REGISTRY_FILE), signRegistry(registry, officerKey));
  } finally {
    wipeSigningKeyPair(officerKey);
  }

  // 4: one site creates the CKKS and data keys and wraps them for every enrolled site's KEM key.
  const enrolledSites = input.sites.filter((s) => !unenrolled.has(s));
  const keySite = input.keySite ?? enrolledSites[0];
  if (keySite === undefined || !enrolledSites.includes(keySite)) {
    throw new InvalidArgumentError(`the key site ${keySite} must be an enrolled site`);
  }
  const registry = loadRegistry(pin.path, pin.sha256).registry;
  const dataKey = randomBytes(DATA_KEY_BYTES);
  const maker = { id: keySite, key: loadSigningKeyPair(join(input.dir, keySite, `${keySite}.key`)) };
  let keyFingerprints: CeremonyResult['keyFingerprints'];
  // Threshold keys: no shared CKKS secret exists; the data key is still made by one site.
  const keyset = input.threshold === undefined ? CkksKeyset.create(input.ckks) : undefined;
  const secret = keyset?.exportSecretKey();
  try {
    for (const site of enrolledSites) {
      const kemKey = registry.members.find((m) => m.id === site)!.kemKey!;
      wrapForSite(publicDir, input.federation, site, kemKey, secret, dataKey, maker);
    }
    keyFingerprints = {
      ...(secret === undefined ? {} : { ckks: secretFingerprint(CKKS_KEY_PURPOSE, secret) }),
      data: secretFingerprint(DATA_KEY_PURPOSE, dataKey),
    };
  } finally {
    secret?.fill(0);
    dataKey.fill(0);
    keyset?.delete();
    wipeSigningKeyPair(maker.key);
  }
  let threshold: CeremonyResult['threshold'];
  if (input.threshold !== undefined) {
    const epoch = thresholdCeremony(input.dir, input.federation, enrolledSites, input.threshold, registry);
    const id = Buffer.from(epoch.epochId).toString('hex');
    keyFingerprints = { ...keyFingerprints, threshold: id };
    threshold = {
      epochId: id,
      threshold: epoch.roster.threshold,
      publicShares: epoch.publicShares.map((p) => ({
        ...p,
        point: epoch.roster.sites.find((s) => s.id === p.site)!.point,
        holds: holds(epoch.roster, p.site),
      })),
    };
  }
  const spec = { federation: input.federation, coordinator, aggregators, sites, auditors };
  return {
    users: federationUsers(spec),
    authorization: federationAuthorization(spec),
    tls: server,
    registry: pin,
    officer,
    keyFingerprints,
    ...(threshold === undefined ? {} : { threshold }),
  };
}

/**
 * A member's own signing key pair (and a site's ML-KEM-768 pair) in its folder `own`; the public
 * halves are handed over to `publicDir`. Secrets are wiped before returning.
 */
function generateMemberKeys(
  own: string,
  id: string,
  role: RegistryRole,
  algorithm: SignatureAlgorithm,
  publicDir: string,
  made?: SigningKeyPair,
): void {
  if (made !== undefined && made.algorithm !== algorithm) {
    throw new InvalidArgumentError(
      `a pre-made ${made.algorithm} key pair for ${id}, the ceremony uses ${algorithm}`,
    );
  }
  const kp = made ?? generateSigningKeyPair(algorithm);
  try {
    saveSigningKeyPair(join(own, `${id}.key`), kp);
    savePublicKey(join(own, `${id}.pub`), kp);
  } finally {
    wipeSigningKeyPair(kp);
  }
  handOver(join(own, `${id}.pub`), publicDir);
  if (role !== 'site') return;
  const kem = generateKemKeyPair();
  try {
    saveKemKeyPair(join(own, `${id}.kem`), kem);
    saveKemPublicKey(join(own, `${id}.kem.pub`), kem.publicKey);
  } finally {
    wipeKemKeyPair(kem);
  }
  handOver(join(own, `${id}.kem.pub`), publicDir);
}

/**
 * Wraps the CKKS secret and the data key for `site` under its KEM public key, into `dir`, each
 * envelope sealed by `maker` (a registered site holding both secrets).
 */
function wrapForSite(
  dir: string,
  federation: string,
  site: string,
  kemPublicKey: Uint8Array,
  secret: Uint8Array | undefined,
  dataKey: Uint8Array,
  maker: EnvelopeMaker,
): void {
  const wrapFor = (bytes: Uint8Array, purpose: string, suffix: string) =>
    writeEnvelope(
      join(dir, `${site}.${suffix}`),
      sealEnvelope(maker, kemPublicKey, bytes, { federation, recipient: site, purpose }),
    );
  if (secret !== undefined) wrapFor(secret, CKKS_KEY_PURPOSE, 'ckks.env');
  wrapFor(dataKey, DATA_KEY_PURPOSE, 'data.env');
}

/**
 * The threshold dealing of every enrolled site on this machine (the demo and tests; across hosts
 * each site runs its two steps where its secrets are): the roster gives the sites points 1…n in
 * order; each site deals, then each collects; the epoch file is written to the shared folder.
 */
function thresholdCeremony(
  dir: string,
  federation: string,
  sites: readonly string[],
  threshold: NonNullable<CeremonyInput['threshold']>,
  registry: MemberRegistry,
): ThresholdEpoch & { readonly publicShares: CollectedEpoch['publicShares'] } {
  const roster = thresholdRosterOf({
    federation,
    paramsId: threshold.ctx.paramsId,
    sites,
    enrolled: () => true,
    threshold: threshold.sites,
    holders: threshold.holders,
    minContributors: threshold.minContributors,
  });
  const view = RegistryView.fromRegistry(registry);
  for (const site of sites) {
    const signingKey = loadSigningKeyPair(join(dir, site, `${site}.key`));
    try {
      dealThresholdShares({
        dir,
        site,
        roster,
        ctx: threshold.ctx,
        signingKey,
        kemKeys: (id) => view.currentKemKey(id),
      });
    } finally {
      wipeSigningKeyPair(signingKey);
    }
  }
  let collected: CollectedEpoch | undefined;
  for (const site of sites) {
    collected = collectThresholdShares({ dir, site, roster, ctx: threshold.ctx, registry: view });
  }
  const epoch = { roster, epochId: collected!.epochId };
  writeThresholdEpoch(dir, epoch);
  return { ...epoch, publicShares: collected!.publicShares };
}

/** What {@link enrollSite} is run for. */
export interface EnrollInput {
  /** The keys folder of the federation (as the ceremony wrote it). */
  readonly dir: string;
  readonly federation: string;
  /**
   * An enrolled site whose envelopes the enrollment opens and whose signing key
   * (`<dir>/<sponsor>/<sponsor>.key`) seals the new site's envelopes (the ceremony runs at a site:
   * docs/key-ceremony.md).
   */
  readonly sponsor: string;
  /** The new site: it must be in the federation's `members.sites` and have a NATS user. */
  readonly site: string;
  readonly algorithm: SignatureAlgorithm;
  /**
   * The shared key's CKKS context; undefined under threshold keys (`crypto.keys: threshold`):
   * there is no CKKS secret to pass on, only the data key, and the new site draws its secret when
   * the coordinator re-shares the key epoch after the enrollment is logged.
   */
  readonly ckks: CkksContext | undefined;
  /**
   * What the sponsor checks its own envelopes against ({@link envelopeTrust} of the sponsor);
   * without it they are opened unchecked (deprecated, as for {@link loadSiteDataKey}).
   */
  readonly trust?: EnvelopeTrust;
}

/** The new site's public files, for `cohort registry enroll`. */
export interface EnrolledSiteFiles {
  /** `<site>.pub`: its public signing key. */
  readonly signingPublicKey: string;
  /** `<site>.kem.pub`: its ML-KEM-768 public key. */
  readonly kemPublicKey: string;
}

/**
 * Enrolls a site into a running federation (the demo's and the tests' one-machine ceremony): the
 * new site creates its signing and ML-KEM-768 keys in its own folder (`<dir>/<site>/`, or `dir`
 * itself in an older flat folder) and hands over the public files; the sponsor site opens its CKKS
 * secret key and federation data key and wraps the same bytes for the new site alone, sealed with
 * its own signing key (envelopes in the shared folder; the new site accepts them once the sponsor
 * is a registered site of its view, and their fingerprints are the federation's). The officer must
 * then log the enrollment (`cohort registry enroll`, docs/key-ceremony.md). The new site then starts
 * with an empty store and joins from the latest snapshot.
 *
 * @returns the paths of the new site's public files.
 */
export function enrollSite(input: EnrollInput): EnrolledSiteFiles {
  const publicDir = publicKeyDir(input.dir);
  const own = publicDir === input.dir ? input.dir : makeDir(join(input.dir, input.site), OWN_DIR_MODE);
  const trust = input.trust ?? input.federation;
  const secret =
    input.ckks === undefined
      ? undefined
      : unwrapSiteEnvelope(input.dir, input.sponsor, trust, 'ckks.env', CKKS_KEY_PURPOSE);
  let dataKey: Uint8Array | undefined;
  let maker: EnvelopeMaker | undefined;
  try {
    if (input.ckks !== undefined) CkksKeyset.import(input.ckks, secret!).delete();
    dataKey = loadSiteDataKey(input.dir, input.sponsor, trust);
    maker = {
      id: input.sponsor,
      key: loadSigningKeyPair(memberSigningKeyFile(input.dir, input.sponsor)),
    };
    generateMemberKeys(own, input.site, 'site', input.algorithm, publicDir);
    const kemPublicKey = loadKemPublicKey(join(own, `${input.site}.kem.pub`));
    wrapForSite(publicDir, input.federation, input.site, kemPublicKey, secret, dataKey, maker);
  } finally {
    secret?.fill(0);
    dataKey?.fill(0);
    if (maker !== undefined) wipeSigningKeyPair(maker.key);
  }
  return {
    signingPublicKey: join(publicDir, `${input.site}.pub`),
    kemPublicKey: join(publicDir, `${input.site}.kem.pub`),
  };
}

/**
 * A site's CKKS keyset: opens `<site>.ckks.env` (in `<dir>/public/`, else the site's folder)
 * with `<site>.kem` of the site's own folder (`<dir>/<site>/`, else `dir`), checked against
 * `trust` ({@link openSiteEnvelope}), and loads it under `ckks`. Errors: those of
 * {@link loadSiteDataKey}, and `CKKS_PARAMS_MISMATCH`.
 *
 * @param trust - the site's {@link EnvelopeTrust} ({@link envelopeTrust} of its member context). A
 *   federation id alone is the deprecated, unchecked form: anyone who knows the site's public KEM
 *   key could have made what it opens.
 */
export function loadSiteCkks(
  ckks: CkksContext,
  dir: string,
  site: string,
  trust: EnvelopeTrust | string,
): CkksKeyset {
  const secret = unwrapSiteEnvelope(dir, site, trust, 'ckks.env', CKKS_KEY_PURPOSE);
  try {
    return CkksKeyset.import(ckks, secret);
  } finally {
    secret.fill(0);
  }
}

/**
 * The keyset a site encodes and reads slot payloads with: in `he` mode with a shared key its CKKS
 * keyset ({@link loadSiteCkks}, checked against `trust`); under threshold keys its own secret of
 * the key ceremony's epoch, with its position ledger in `options.dataDir` (`openSiteThreshold`;
 * it encrypts, and decrypts nothing alone); in `plain` mode there is no secret, and no envelope is
 * read. `delete()` frees the keys (and closes the ledger).
 */
export function loadSiteKeyset(
  lanes: LaneContext,
  dir: string,
  site: string,
  trust: EnvelopeTrust | string,
  options: { readonly dataDir?: string } = {},
): LaneKeyset {
  if (lanes instanceof PlainLaneContext) return new PlainLaneKeyset(lanes);
  if (lanes instanceof CkksContext) return loadSiteCkks(lanes, dir, site, trust);
  if (lanes instanceof ThresholdLaneContext) {
    if (options.dataDir === undefined) {
      throw new InvalidArgumentError('threshold keys need the site’s data folder (its position ledger)', {
        details: { name: 'options.dataDir' },
      });
    }
    const pin = typeof trust === 'string' ? undefined : trust.fingerprints['threshold'];
    const t = openSiteThreshold({
      lanes,
      keysDir: dir,
      dataDir: options.dataDir,
      site,
      federation: typeof trust === 'string' ? trust : trust.federation,
      ...(pin === undefined ? {} : { pin }),
    });
    return {
      ctx: lanes,
      encrypt: (values, position) => t.keyset.encrypt(values, position),
      decrypt: () => t.keyset.decrypt(),
      delete: () => t.close(),
    };
  }
  throw new InvalidArgumentError(`unknown slot cipher of mode ${String(lanes.mode)}`);
}

/**
 * A site's federation data key: opens `<site>.data.env` with `<site>.kem` (folders as in
 * {@link loadSiteCkks}; bound to the federation, the site and {@link DATA_KEY_PURPOSE}), checked
 * against `trust` ({@link openSiteEnvelope}).
 *
 * @param trust - as for {@link loadSiteCkks}.
 * @returns the 32-byte data key; the caller owns and wipes it.
 * @throws CryptoError `KEY_FILE_UNREADABLE` (missing envelope or KEM key), `KEY_FILE_PERMISSIONS`,
 *   `ENVELOPE_MALFORMED`, `ENVELOPE_UNSIGNED`, `ENVELOPE_CONTEXT_MISMATCH`, `ENVELOPE_MAKER_REFUSED`,
 *   `ENVELOPE_SIGNATURE_INVALID`, `KEY_FINGERPRINT_MISMATCH` (each naming the envelope file),
 *   `UNWRAP_FAILED` (another site's envelope, another federation, tampering) or `KEY_INVALID` (an
 *   envelope that opens but does not hold 32 bytes); InvalidArgumentError for an empty `site` or
 *   `federation`.
 */
export function loadSiteDataKey(dir: string, site: string, trust: EnvelopeTrust | string): Uint8Array {
  const federation = typeof trust === 'string' ? trust : trust?.federation;
  for (const [name, value] of [
    ['dir', dir],
    ['site', site],
    ['federation', federation],
  ] as const) {
    if (typeof value !== 'string' || value.length === 0) {
      throw new InvalidArgumentError(`${name} must be a non-empty string`, { details: { name } });
    }
  }
  const key = unwrapSiteEnvelope(dir, site, trust, 'data.env', DATA_KEY_PURPOSE);
  if (key.length !== DATA_KEY_BYTES) {
    key.fill(0);
    throw new CryptoError(
      'KEY_INVALID',
      `${site}.data.env of ${dir} holds ${key.length} bytes; a federation data key is ${DATA_KEY_BYTES}`,
      { details: { site, actual: key.length, expected: DATA_KEY_BYTES } },
    );
  }
  return key;
}

/** Writes an envelope owner-only (also over an existing file). */
function writeEnvelope(path: string, envelope: Uint8Array): void {
  writeFileSync(path, envelope, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * Opens the envelope bytes read from `path` for `site`: with an {@link EnvelopeTrust}, a sealed
 * envelope whose maker `trust.makers` admits, whose signature verifies and whose secret has the
 * stated (and pinned, when `trust.fingerprints` names one) fingerprint (`openSealedEnvelope`).
 * With a bare federation id (deprecated), the envelope is opened without asking who made it.
 * Every refusal names `path`.
 */
export function openSiteEnvelope(
  kemSecretKey: Uint8Array,
  envelope: Uint8Array,
  path: string,
  site: string,
  trust: EnvelopeTrust | string,
  purpose: string,
): Uint8Array {
  const federation = typeof trust === 'string' ? trust : trust.federation;
  const ctx = { federation, recipient: site, purpose };
  try {
    if (typeof trust !== 'string') {
      return openSealedEnvelope(kemSecretKey, envelope, ctx, {
        makers: trust.makers,
        fingerprint: trust.fingerprints[purpose],
      }).secret;
    }
    const sealed = String.fromCharCode(...envelope.subarray(0, 4)) === SEALED_ENVELOPE_MAGIC;
    return unwrapSecret(kemSecretKey, sealed ? readSealedEnvelope(envelope).inner : envelope, ctx);
  } catch (cause) {
    if (cause instanceof CryptoError) {
      throw new CryptoError(cause.code, `${path}: ${cause.message}`, {
        cause,
        details: { ...cause.details, path },
      });
    }
    throw cause;
  }
}

/**
 * Opens `<site>.<suffix>` (the shared folder of `dir`, else the site's own) with `<site>.kem` of
 * the site's own folder, checked against `trust` ({@link openSiteEnvelope}); the KEM secret is
 * wiped on every path.
 */
function unwrapSiteEnvelope(
  dir: string,
  site: string,
  trust: EnvelopeTrust | string,
  suffix: string,
  purpose: string,
): Uint8Array {
  if (
    typeof trust !== 'string' &&
    (typeof trust?.makers !== 'function' || trust.fingerprints === undefined)
  ) {
    throw new InvalidArgumentError(
      'trust must be an EnvelopeTrust (envelopeTrust(member)) or a federation id',
      {
        details: { name: 'trust' },
      },
    );
  }
  const kem = loadKemKeyPair(join(memberKeyDir(dir, site), `${site}.kem`));
  try {
    const path = publicFile(dir, `${site}.${suffix}`, site);
    let envelope: Uint8Array;
    try {
      envelope = readFileSync(path);
    } catch (cause) {
      throw new CryptoError('KEY_FILE_UNREADABLE', `cannot read ${site}.${suffix} (${path})`, {
        cause,
        details: { path },
      });
    }
    return openSiteEnvelope(kem.secretKey, envelope, path, site, trust, purpose);
  } finally {
    wipeKemKeyPair(kem);
  }
}
