import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CkksContext, CkksKeyset } from '../../crypto/ckks/index.ts';
import {
  generateKemKeyPair,
  loadKemKeyPair,
  saveKemKeyPair,
  saveKemPublicKey,
  unwrapSecret,
  wipeKemKeyPair,
  wrapSecret,
} from '../../crypto/kem/index.ts';
import {
  generateSigningKeyPair,
  type SignatureAlgorithm,
  savePublicKey,
  saveSigningKeyPair,
  wipeSigningKeyPair,
} from '../../crypto/signature/index.ts';
import { CryptoError, InvalidArgumentError } from '../errors/index.ts';
import {
  federationAuthorization,
  federationUsers,
  type NatsServerTlsFiles,
  type NatsUser,
} from '../transport/index.ts';
import { DATA_KEY_BYTES } from '../versions/snapshot-cipher.ts';
import {
  createFederationTls,
  federationTlsPaths,
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
  /** Folder the keys are written to (created; secret files 0600). */
  readonly dir: string;
  readonly federation: string;
  readonly coordinator: string;
  readonly aggregators: readonly string[];
  readonly sites: readonly string[];
  /** Read-only members (they read the log); default none. */
  readonly auditors?: readonly string[];
  readonly algorithm: SignatureAlgorithm;
  readonly ckks: CkksContext;
  /**
   * Folder of the federation's TLS secrets (`ca.key.pem`, `server.crt`, `server.key.pem`, and
   * `ca.crt`); default `dir`. `ca.crt` is written to `dir` too, for the members.
   */
  readonly tlsDir?: string;
  /** Hosts (IPs, DNS names) nats-server's certificate names; default 127.0.0.1 and localhost. */
  readonly natsHosts?: readonly string[];
}

/** What {@link runKeyCeremony} hands the operator of nats-server. */
export interface CeremonyResult {
  /** The NKEY users of every member with their permissions. */
  readonly users: NatsUser[];
  /** {@link users} as a nats-server `authorization` block. */
  readonly authorization: string;
  /** nats-server's TLS files (certificate, key, federation CA). */
  readonly tls: NatsServerTlsFiles;
}

/**
 * A key ceremony for a whole federation on one machine (the demo and tests; in production each
 * member generates its own signing and KEM keys and sends only public keys, and the ceremony runs
 * at one site). Writes per member `<id>.key` + `<id>.pub` (lattice signing) and its NATS
 * credentials (`<id>.nk` NKEY seed and `<id>.tls.key` TLS client key, both 0600; `<id>.nk.pub`,
 * `<id>.tls.pub`, and `<id>.tls.crt` issued by the federation CA: see `nats-credentials.ts`); the
 * federation CA and nats-server's certificate in `tlsDir`, and `ca.crt` in `dir`; per site `<id>.kem` + `<id>.kem.pub` (ML-KEM-768), `<id>.ckks.env`: the CKKS
 * secret key wrapped for that site alone, and `<id>.data.env`: the federation data key (32 random
 * bytes, one for the whole federation) wrapped for that site alone under the same ML-KEM-768 key
 * (purpose {@link DATA_KEY_PURPOSE}). Envelopes are written 0600. Neither the CKKS secret nor the
 * data key is ever written in the clear; both are wiped before returning.
 * No password is written anywhere: members authenticate with their NKEY over mutual TLS.
 * Returns the NATS users, their `authorization` block and nats-server's TLS files.
 */
export function runKeyCeremony(input: CeremonyInput): CeremonyResult {
  mkdirSync(input.dir, { recursive: true });
  const tlsDir = input.tlsDir ?? input.dir;
  mkdirSync(tlsDir, { recursive: true });
  const { ca, server } = createFederationTls(tlsDir, {
    hosts: input.natsHosts ?? ['127.0.0.1', 'localhost'],
    overwrite: true,
  });
  const caCert = federationTlsPaths(input.dir).caCert;
  if (tlsDir !== input.dir) copyFileSync(server.ca, caCert);
  const nats = (id: string) => {
    const { nkey, tlsPublicKeyPem } = generateMemberNatsKeys(input.dir, id, true);
    issueMemberCertificate(ca, id, tlsPublicKeyPem, memberNatsPaths(input.dir, id).tlsCert);
    return nkey;
  };
  const credential = (id: string) => {
    const kp = generateSigningKeyPair(input.algorithm);
    saveSigningKeyPair(join(input.dir, `${id}.key`), kp);
    savePublicKey(join(input.dir, `${id}.pub`), kp);
    wipeSigningKeyPair(kp);
    return { id, nkey: nats(id) };
  };
  const coordinator = credential(input.coordinator);
  const aggregators = input.aggregators.map(credential);
  const sites = input.sites.map(credential);
  const auditors = (input.auditors ?? []).map(credential);

  const keyset = CkksKeyset.create(input.ckks);
  const secret = keyset.exportSecretKey();
  const dataKey = randomBytes(DATA_KEY_BYTES);
  try {
    for (const site of input.sites) provisionSite(input.dir, input.federation, site, secret, dataKey);
  } finally {
    secret.fill(0);
    dataKey.fill(0);
    keyset.delete();
  }
  const spec = { federation: input.federation, coordinator, aggregators, sites, auditors };
  return { users: federationUsers(spec), authorization: federationAuthorization(spec), tls: server };
}

/** Creates `site`'s ML-KEM-768 key pair and wraps the CKKS secret and the data key for it. */
function provisionSite(
  dir: string,
  federation: string,
  site: string,
  secret: Uint8Array,
  dataKey: Uint8Array,
): void {
  const kem = generateKemKeyPair();
  try {
    saveKemKeyPair(join(dir, `${site}.kem`), kem);
    saveKemPublicKey(join(dir, `${site}.kem.pub`), kem.publicKey);
    const wrapFor = (bytes: Uint8Array, purpose: string, suffix: string) =>
      writeEnvelope(
        join(dir, `${site}.${suffix}`),
        wrapSecret(kem.publicKey, bytes, { federation, recipient: site, purpose }),
      );
    wrapFor(secret, CKKS_KEY_PURPOSE, 'ckks.env');
    wrapFor(dataKey, DATA_KEY_PURPOSE, 'data.env');
  } finally {
    wipeKemKeyPair(kem);
  }
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

/**
 * Enrolls a site into a running federation (the demo's and the tests' one-folder ceremony): opens
 * the sponsor site's CKKS secret key and federation data key, creates the new site's signing key
 * (`<site>.key`, `<site>.pub`) and ML-KEM-768 key, and wraps both secrets for it alone. Members
 * pick the new public key up on first use (`openMember`'s registry). The new site then starts with
 * an empty store and joins from the latest snapshot. In production the new site generates its own
 * keys and hands over only `<site>.pub` and `<site>.kem.pub`; a signed registry of members will
 * replace the folder of `.pub` files.
 */
export function enrollSite(input: EnrollInput): void {
  const keyset = loadSiteCkks(input.ckks, input.dir, input.sponsor, input.federation);
  const secret = keyset.exportSecretKey();
  const dataKey = loadSiteDataKey(input.dir, input.sponsor, input.federation);
  try {
    const kp = generateSigningKeyPair(input.algorithm);
    saveSigningKeyPair(join(input.dir, `${input.site}.key`), kp);
    savePublicKey(join(input.dir, `${input.site}.pub`), kp);
    wipeSigningKeyPair(kp);
    provisionSite(input.dir, input.federation, input.site, secret, dataKey);
  } finally {
    secret.fill(0);
    dataKey.fill(0);
    keyset.delete();
  }
}

/**
 * A site's CKKS keyset: unwraps `<dir>/<site>.ckks.env` with `<dir>/<site>.kem` (bound to the
 * federation and the site) and loads it under `ckks`. Errors: `UNWRAP_FAILED` (another site's
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
 * A site's federation data key: unwraps `<dir>/<site>.data.env` with `<dir>/<site>.kem` (bound to
 * the federation, the site and {@link DATA_KEY_PURPOSE}).
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
      `${site}.data.env in ${dir} holds ${key.length} bytes; a federation data key is ${DATA_KEY_BYTES}`,
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

/** Opens `<dir>/<site>.<suffix>` with `<dir>/<site>.kem`; the KEM secret is wiped on every path. */
function unwrapSiteEnvelope(
  dir: string,
  site: string,
  federation: string,
  suffix: string,
  purpose: string,
): Uint8Array {
  const kem = loadKemKeyPair(join(dir, `${site}.kem`));
  try {
    let envelope: Uint8Array;
    try {
      envelope = readFileSync(join(dir, `${site}.${suffix}`));
    } catch (cause) {
      throw new CryptoError('KEY_FILE_UNREADABLE', `cannot read ${site}.${suffix} in ${dir}`, {
        cause,
        details: { path: join(dir, `${site}.${suffix}`) },
      });
    }
    return unwrapSecret(kem.secretKey, envelope, { federation, recipient: site, purpose });
  } finally {
    wipeKemKeyPair(kem);
  }
}
