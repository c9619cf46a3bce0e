import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { CkksContext, CkksKeyset } from '../../crypto/ckks/index.ts';
import {
  generateKemKeyPair,
  loadKemKeyPair,
  loadKemPublicKey,
  saveKemKeyPair,
  saveKemPublicKey,
  unwrapSecret,
  wipeKemKeyPair,
  wrapSecret,
} from '../../crypto/kem/index.ts';
import {
  type LaneContext,
  type LaneKeyset,
  PlainLaneContext,
  PlainLaneKeyset,
} from '../../crypto/lanes/index.ts';
import {
  generateSigningKeyPair,
  type SignatureAlgorithm,
  type SigningKeyPair,
  savePublicKey,
  saveSigningKeyPair,
  toPublicSigningKey,
  wipeSigningKeyPair,
} from '../../crypto/signature/index.ts';
import { CryptoError, InvalidArgumentError } from '../errors/index.ts';
import {
  assertMemberId,
  loadRegistry,
  memberKeyDir,
  PUBLIC_KEY_DIR,
  publicFile,
  publicKeyDir,
  REGISTRY_FILE,
  type RegistryPin,
  type RegistryRole,
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
import {
  createFederationTls,
  generateMemberNatsKeys,
  issueMemberCertificate,
  memberNatsPaths,
} from './nats-credentials.ts';

/** Purpose bound into the envelope that carries the CKKS secret key to a site. */
export const CKKS_KEY_PURPOSE = 'ckks-secret-key';

/**
 * Purpose bound into the envelope that carries the federation data key (32 bytes, AES-256 key of
 * model snapshots; held by sites only) to a site.
 */
export const DATA_KEY_PURPOSE = 'federation-data-key';

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
 *    lists it: `<dir>/public/<site>.ckks.env` and `<site>.data.env` (purposes
 *    {@link CKKS_KEY_PURPOSE}, {@link DATA_KEY_PURPOSE}; 0600). Neither secret is ever written in
 *    the clear; both are wiped before returning.
 *
 * No password is written anywhere: members authenticate with their NKEY over mutual TLS.
 * Returns the NATS users, their `authorization` block, nats-server's TLS files, the registry pin
 * and the officer's key files.
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
  const keyset = CkksKeyset.create(input.ckks);
  const secret = keyset.exportSecretKey();
  const dataKey = randomBytes(DATA_KEY_BYTES);
  try {
    for (const site of enrolledSites) {
      const kemKey = registry.members.find((m) => m.id === site)!.kemKey!;
      wrapForSite(publicDir, input.federation, site, kemKey, secret, dataKey);
    }
  } finally {
    secret.fill(0);
    dataKey.fill(0);
    keyset.delete();
  }
  const spec = { federation: input.federation, coordinator, aggregators, sites, auditors };
  return {
    users: federationUsers(spec),
    authorization: federationAuthorization(spec),
    tls: server,
    registry: pin,
    officer,
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

/** Wraps the CKKS secret and the data key for `site` under its KEM public key, into `dir`. */
function wrapForSite(
  dir: string,
  federation: string,
  site: string,
  kemPublicKey: Uint8Array,
  secret: Uint8Array,
  dataKey: Uint8Array,
): void {
  const wrapFor = (bytes: Uint8Array, purpose: string, suffix: string) =>
    writeEnvelope(
      join(dir, `${site}.${suffix}`),
      wrapSecret(kemPublicKey, bytes, { federation, recipient: site, purpose }),
    );
  wrapFor(secret, CKKS_KEY_PURPOSE, 'ckks.env');
  wrapFor(dataKey, DATA_KEY_PURPOSE, 'data.env');
}

/** What {@link enrollSite} is run for. */
export interface EnrollInput {
  /** The keys folder of the federation (as the ceremony wrote it). */
  readonly dir: string;
  readonly federation: string;
  /** An enrolled site whose envelopes the enrollment opens (the ceremony runs at a site: DESIGN §4). */
  readonly sponsor: string;
  /** The new site: it must be in the federation's `members.sites` and have a NATS user. */
  readonly site: string;
  readonly algorithm: SignatureAlgorithm;
  readonly ckks: CkksContext;
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
 * secret key and federation data key and wraps both for the new site alone (envelopes in the
 * shared folder). Without a signed registry, members pick the new `<site>.pub` up on first use; with
 * one, the officer must then log the enrollment (`cohort registry enroll`, docs/key-ceremony.md).
 * The new site then starts with an empty store and joins from the latest snapshot.
 *
 * @returns the paths of the new site's public files.
 */
export function enrollSite(input: EnrollInput): EnrolledSiteFiles {
  const publicDir = publicKeyDir(input.dir);
  const own = publicDir === input.dir ? input.dir : makeDir(join(input.dir, input.site), OWN_DIR_MODE);
  const keyset = loadSiteCkks(input.ckks, input.dir, input.sponsor, input.federation);
  const secret = keyset.exportSecretKey();
  const dataKey = loadSiteDataKey(input.dir, input.sponsor, input.federation);
  try {
    generateMemberKeys(own, input.site, 'site', input.algorithm, publicDir);
    const kemPublicKey = loadKemPublicKey(join(own, `${input.site}.kem.pub`));
    wrapForSite(publicDir, input.federation, input.site, kemPublicKey, secret, dataKey);
  } finally {
    secret.fill(0);
    dataKey.fill(0);
    keyset.delete();
  }
  return {
    signingPublicKey: join(publicDir, `${input.site}.pub`),
    kemPublicKey: join(publicDir, `${input.site}.kem.pub`),
  };
}

/**
 * A site's CKKS keyset: unwraps `<site>.ckks.env` (in `<dir>/public/`, else the site's folder)
 * with `<site>.kem` of the site's own folder (`<dir>/<site>/`, else `dir`), bound to the
 * federation and the site, and loads it under `ckks`. Errors: `UNWRAP_FAILED` (another site's
 * envelope, tampering), `CKKS_PARAMS_MISMATCH`, `KEY_FILE_UNREADABLE`.
 */
export function loadSiteCkks(ckks: CkksContext, dir: string, site: string, federation: string): CkksKeyset {
  const secret = unwrapSiteEnvelope(dir, site, federation, 'ckks.env', CKKS_KEY_PURPOSE);
  try {
    return CkksKeyset.import(ckks, secret);
  } finally {
    secret.fill(0);
  }
}

/**
 * The keyset a site encodes and reads slot payloads with: in `he` mode its CKKS keyset
 * ({@link loadSiteCkks}); in `plain` mode there is no secret, and no envelope is read.
 */
export function loadSiteKeyset(
  lanes: LaneContext,
  dir: string,
  site: string,
  federation: string,
): LaneKeyset {
  if (lanes instanceof PlainLaneContext) return new PlainLaneKeyset(lanes);
  if (lanes instanceof CkksContext) return loadSiteCkks(lanes, dir, site, federation);
  throw new InvalidArgumentError(`unknown slot cipher of mode ${String(lanes.mode)}`);
}

/**
 * A site's federation data key: unwraps `<site>.data.env` with `<site>.kem` (folders as in
 * {@link loadSiteCkks}; bound to the federation, the site and {@link DATA_KEY_PURPOSE}).
 *
 * @returns the 32-byte data key; the caller owns and wipes it.
 * @throws CryptoError `KEY_FILE_UNREADABLE` (missing envelope or KEM key), `KEY_FILE_PERMISSIONS`,
 *   `ENVELOPE_MALFORMED`, `UNWRAP_FAILED` (another site's envelope, another federation, tampering)
 *   or `KEY_INVALID` (an envelope that opens but does not hold 32 bytes); InvalidArgumentError for
 *   an empty `site` or `federation`.
 */
export function loadSiteDataKey(dir: string, site: string, federation: string): Uint8Array {
  for (const [name, value] of [
    ['dir', dir],
    ['site', site],
    ['federation', federation],
  ] as const) {
    if (typeof value !== 'string' || value.length === 0) {
      throw new InvalidArgumentError(`${name} must be a non-empty string`, { details: { name } });
    }
  }
  const key = unwrapSiteEnvelope(dir, site, federation, 'data.env', DATA_KEY_PURPOSE);
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
 * Opens `<site>.<suffix>` (the shared folder of `dir`, else the site's own) with `<site>.kem` of
 * the site's own folder; the KEM secret is wiped on every path.
 */
function unwrapSiteEnvelope(
  dir: string,
  site: string,
  federation: string,
  suffix: string,
  purpose: string,
): Uint8Array {
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
    return unwrapSecret(kem.secretKey, envelope, { federation, recipient: site, purpose });
  } finally {
    wipeKemKeyPair(kem);
  }
}
