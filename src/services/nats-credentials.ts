import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import { readKeyFile, writeKeyFile } from '../../crypto/signature/key-file-io.ts';
import type { CohortConfig } from '../config/index.ts';
import { ConfigError, CryptoError, InvalidArgumentError } from '../errors/index.ts';
import { publicFile, type RegistryRole, RegistryView } from '../registry/index.ts';
import {
  assertUserNkey,
  type CertificateAuthority,
  createCertificateAuthority,
  type FederationAuthorizationSpec,
  generateTlsKeyPair,
  issueCertificate,
  type MemberCredential,
  type NatsServerTlsFiles,
} from '../transport/index.ts';

/**
 * A member's NATS credential files in its keys folder. Secret (written 0600, refused when group or
 * others can read them): `seed`, `tlsKey`. Public (handed to the operator): `nkey`, `tlsPublicKey`.
 * From the operator: `tlsCert`, and the federation's `ca.crt` ({@link federationTlsPaths}).
 */
export interface MemberNatsPaths {
  /** `<id>.nk`: NKEY user seed (`SU…`). */
  readonly seed: string;
  /** `<id>.nk.pub`: public NKEY (`U…`), listed in the server configuration. */
  readonly nkey: string;
  /** `<id>.tls.key`: ECDSA P-256 TLS client key, PKCS#8 PEM. */
  readonly tlsKey: string;
  /** `<id>.tls.pub`: its public key (SPKI PEM), which the CA certifies. */
  readonly tlsPublicKey: string;
  /** `<id>.tls.crt`: the client certificate the federation CA issued for it. */
  readonly tlsCert: string;
}

/** The federation's TLS files: `ca.crt` (public, every member) and the operator's secrets. */
export interface FederationTlsPaths {
  /** `ca.crt`: the federation CA certificate. */
  readonly caCert: string;
  /** `ca.key.pem`: the CA's private key (operator only, 0600). */
  readonly caKey: string;
  /** `server.crt`: nats-server's certificate. */
  readonly serverCert: string;
  /** `server.key.pem`: nats-server's private key (the server host only, 0600). */
  readonly serverKey: string;
}

/** Paths of `id`'s NATS credential files in `dir`. */
export function memberNatsPaths(dir: string, id: string): MemberNatsPaths {
  return {
    seed: join(dir, `${id}.nk`),
    nkey: join(dir, `${id}.nk.pub`),
    tlsKey: join(dir, `${id}.tls.key`),
    tlsPublicKey: join(dir, `${id}.tls.pub`),
    tlsCert: join(dir, `${id}.tls.crt`),
  };
}

/** Paths of the federation's TLS files in `dir` (no member file can have these names). */
export function federationTlsPaths(dir: string): FederationTlsPaths {
  return {
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key.pem'),
    serverCert: join(dir, 'server.crt'),
    serverKey: join(dir, 'server.key.pem'),
  };
}

const encoder = new TextEncoder();

function refuseExisting(paths: readonly string[], overwrite: boolean): void {
  if (overwrite) return;
  const existing = paths.filter((p) => existsSync(p));
  if (existing.length > 0) {
    throw new CryptoError('KEY_FILE_EXISTS', `refusing to overwrite ${existing.join(', ')}`, {
      details: { paths: existing },
    });
  }
}

/**
 * A member's own NATS keys, generated where the member runs: an NKEY user (`<id>.nk` seed, 0600;
 * `<id>.nk.pub`) and an ECDSA P-256 TLS client key (`<id>.tls.key`, 0600; `<id>.tls.pub`). Only
 * the two public files leave the member: the operator lists the NKEY in nats.conf and the CA
 * certifies the TLS key (`<id>.tls.crt`). Refuses to overwrite unless `overwrite`.
 *
 * @returns the public NKEY and the TLS public key (PEM).
 */
export function generateMemberNatsKeys(
  dir: string,
  id: string,
  overwrite = false,
): { nkey: string; tlsPublicKeyPem: string } {
  const paths = memberNatsPaths(dir, id);
  refuseExisting([paths.seed, paths.nkey, paths.tlsKey, paths.tlsPublicKey], overwrite);
  // A secret's folder must be writable by its owner alone (the secret-file check refuses it otherwise).
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const user = createUser();
  const seed = user.getSeed();
  const nkey = user.getPublicKey();
  const tls = generateTlsKeyPair();
  try {
    writeKeyFile(paths.seed, seed, true);
    writeKeyFile(paths.nkey, encoder.encode(`${nkey}\n`), false);
    writeKeyFile(paths.tlsKey, encoder.encode(tls.privateKeyPem), true);
    writeKeyFile(paths.tlsPublicKey, encoder.encode(tls.publicKeyPem), false);
  } finally {
    seed.fill(0);
    user.clear();
  }
  return { nkey, tlsPublicKeyPem: tls.publicKeyPem };
}

/**
 * Creates the federation CA (`ca.crt`, `ca.key.pem` 0600) and nats-server's certificate for
 * `hosts` (`server.crt`, `server.key.pem` 0600) in `dir`. Refuses to overwrite unless `overwrite`.
 */
export function createFederationTls(
  dir: string,
  options: { readonly hosts: readonly string[]; readonly days?: number; readonly overwrite?: boolean },
): { ca: CertificateAuthority; server: NatsServerTlsFiles } {
  const paths = federationTlsPaths(dir);
  refuseExisting(Object.values(paths), options.overwrite === true);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = createCertificateAuthority('cohort federation CA', Math.max(3650, options.days ?? 0));
  const server = generateTlsKeyPair();
  const serverCert = issueCertificate(ca, {
    commonName: 'nats-server',
    publicKey: server.publicKeyPem,
    usage: 'server',
    hosts: options.hosts,
    ...(options.days === undefined ? {} : { days: options.days }),
  });
  writeKeyFile(paths.caKey, encoder.encode(ca.keyPem), true);
  writeKeyFile(paths.caCert, encoder.encode(ca.certPem), false);
  writeKeyFile(paths.serverKey, encoder.encode(server.privateKeyPem), true);
  writeKeyFile(paths.serverCert, encoder.encode(serverCert), false);
  return { ca, server: { cert: paths.serverCert, key: paths.serverKey, ca: paths.caCert } };
}

/** Reads the CA of {@link createFederationTls} from `dir` (the key through the secret-file check). */
export function loadCertificateAuthority(dir: string): CertificateAuthority {
  const paths = federationTlsPaths(dir);
  const key = readKeyFile(paths.caKey, true);
  try {
    return {
      certPem: Buffer.from(readKeyFile(paths.caCert, false)).toString('utf8'),
      keyPem: Buffer.from(key).toString('utf8'),
    };
  } finally {
    key.fill(0);
  }
}

/**
 * Certifies a member's TLS public key (`publicKeyPem`, from its `<id>.tls.pub`) as a client of the
 * federation (common name = member id) and writes the certificate to `out`.
 */
export function issueMemberCertificate(
  ca: CertificateAuthority,
  id: string,
  publicKeyPem: string,
  out: string,
  days?: number,
): void {
  const cert = issueCertificate(ca, {
    commonName: id,
    publicKey: publicKeyPem,
    usage: 'client',
    ...(days === undefined ? {} : { days }),
  });
  writeKeyFile(out, encoder.encode(cert), false);
}

/**
 * `id`'s public NKEY from `<id>.nk.pub` of the keys folder `dir`: its shared `public/` folder,
 * else `<dir>/<id>/`, else `dir` itself (see `publicFile` of `src/registry`).
 */
export function readMemberNkey(dir: string, id: string): string {
  const path = publicFile(dir, `${id}.nk.pub`, id);
  const nkey = Buffer.from(readKeyFile(path, false)).toString('utf8').trim();
  assertUserNkey(path, nkey);
  return nkey;
}

/** A configured member left without a NATS user, and why. */
export interface MemberWithoutUser {
  readonly id: string;
  readonly why: string;
}

/** The NATS users of a federation: the spec to render, and who gets none. */
export interface FederationUsersPlan {
  readonly spec: FederationAuthorizationSpec;
  /** Configured members, or members of the registry, that get no user (not enrolled, revoked, not configured). */
  readonly without: readonly MemberWithoutUser[];
}

/**
 * The authorization spec of a federation from its member registry as `registry` sees it (the
 * pinned registry, with the log's enrollments, rotations and revocations folded in:
 * `readLoggedRegistry`), not from the configuration alone: a member gets a user when the registry
 * lists it, it is not revoked, and the configuration gives it the registry's role. Its NKEY is the
 * registry's (an enrollment without one: `<id>.nk.pub` of the keys folder, {@link readMemberNkey}).
 * A revoked member, a configured member not enrolled yet, and a registry member the configuration
 * does not name get no user; {@link FederationUsersPlan.without} says who and why.
 *
 * @throws ConfigError without a members section, when the coordinator has no user, or when the
 *   registry and the configuration give a member different roles; CryptoError
 *   `KEY_FILE_UNREADABLE` naming a missing `.nk.pub`.
 */
export function federationAuthorizationSpec(
  config: CohortConfig,
  registry: RegistryView,
  keysDir?: string,
): FederationUsersPlan {
  const members = config.members;
  if (!members) {
    throw new ConfigError('CONFIG_INVALID', 'members: the NATS users are made from the members section', {
      details: { path: 'members' },
    });
  }
  if (!(registry instanceof RegistryView)) {
    throw new InvalidArgumentError('registry must be a RegistryView', { details: { name: 'registry' } });
  }
  const dir = keysDir ?? members.keysDir;
  const without: MemberWithoutUser[] = [];
  const configured = new Map<string, RegistryRole>([
    [members.coordinator, 'coordinator'],
    ...members.aggregators.map((a) => [a.id, 'aggregator'] as const),
    ...members.sites.map((s) => [s.id, 'site'] as const),
    ...members.auditors.map((a) => [a.id, 'auditor'] as const),
  ]);
  const users = (role: RegistryRole): MemberCredential[] => {
    const out: MemberCredential[] = [];
    for (const [id, configuredRole] of configured) {
      if (configuredRole !== role) continue;
      const m = registry.member(id);
      if (m === undefined) {
        without.push({ id, why: 'not in the member registry (not enrolled)' });
        continue;
      }
      if (m.role !== role) {
        throw new ConfigError(
          'CONFIG_INVALID',
          `members: ${id} is configured as ${role}, the member registry lists it as ${m.role}`,
          { details: { path: 'members', member: id } },
        );
      }
      if (m.revokedFrom !== undefined) {
        without.push({ id, why: `revoked from round ${m.revokedFrom}` });
        continue;
      }
      out.push({ id, nkey: m.nkey ?? readMemberNkey(dir, id) });
    }
    return out;
  };
  const coordinator = users('coordinator')[0];
  if (coordinator === undefined) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `members.coordinator: ${members.coordinator} is not a member of the registry, so it would have no NATS user`,
      { details: { path: 'members.coordinator' } },
    );
  }
  const spec: FederationAuthorizationSpec = {
    federation: config.federation.id,
    coordinator,
    aggregators: users('aggregator'),
    sites: users('site'),
    auditors: users('auditor'),
    responseExpiresMs: Math.max(60_000, 2 * config.nats.timeoutMs),
  };
  for (const id of registry.ids()) {
    if (!configured.has(id)) without.push({ id, why: 'in the member registry, not in the configuration' });
  }
  return { spec, without };
}
