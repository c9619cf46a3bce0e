import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeConnectionOptions } from '@nats-io/transport-node';
import { type CkksContext, getCkksContext } from '../../crypto/ckks/index.ts';
import {
  loadPublicKey,
  loadSigningKeyPair,
  type PublicSigningKey,
  type SigningKeyPair,
} from '../../crypto/signature/index.ts';
import type { CohortConfig } from '../config/index.ts';
import { ConfigError, InvalidArgumentError } from '../errors/index.ts';
import { createLogger, type Logger } from '../log/index.ts';
import type { KeyLookup } from '../protocol/index.ts';
import {
  connectTransport,
  type FederationSubjects,
  federationSubjects,
  type NatsAuthFiles,
  type NatsTransport,
  natsAuthOptions,
} from '../transport/index.ts';
import { federationTlsPaths, memberNatsPaths } from './nats-credentials.ts';

/** A member's role in the federation. */
export type MemberRole = 'coordinator' | 'aggregator' | 'site' | 'auditor';

/** Everything a service process needs: validated config, keys, registry, NATS, logger. */
export interface MemberContext {
  readonly config: CohortConfig;
  readonly members: NonNullable<CohortConfig['members']>;
  readonly member: string;
  readonly role: MemberRole;
  readonly signing: SigningKeyPair;
  /** Public signing keys of every member, from `<keysDir>/*.pub`. */
  readonly registry: ReadonlyMap<string, PublicSigningKey>;
  readonly keys: KeyLookup;
  readonly keysDir: string;
  readonly transport: NatsTransport;
  readonly subjects: FederationSubjects;
  readonly ckks: CkksContext;
  readonly log: Logger;
  close(): Promise<void>;
}

/** The role `member` has in `config`, or an error naming the ids that exist. */
export function roleOf(config: CohortConfig, member: string): MemberRole {
  const m = config.members;
  if (!m) {
    throw new ConfigError('CONFIG_INVALID', 'members: the services need a members section', {
      details: { path: 'members' },
    });
  }
  if (member === m.coordinator) return 'coordinator';
  if (m.aggregators.some((a) => a.id === member)) return 'aggregator';
  if (m.sites.some((s) => s.id === member)) return 'site';
  if (m.auditors.some((a) => a.id === member)) return 'auditor';
  throw new InvalidArgumentError(
    `--member ${member} is not in members (coordinator ${m.coordinator}, aggregators ${m.aggregators.map((a) => a.id).join(', ')}, sites ${m.sites.map((s) => s.id).join(', ')}, auditors ${m.auditors.map((a) => a.id).join(', ') || 'none'})`,
  );
}

/**
 * A member of the configuration whose public key was not in the registry at start: a site
 * enrolled since (`enrollSite` wrote `<id>.pub`). Read once and added; undefined while absent.
 * Only ids the configuration names are looked up, so a stray file cannot add a member.
 */
function enrolledKey(
  registry: Map<string, PublicSigningKey>,
  dir: string,
  members: ReadonlySet<string>,
  id: string,
): PublicSigningKey | undefined {
  if (!members.has(id)) return undefined;
  const path = join(dir, `${id}.pub`);
  if (!existsSync(path)) return undefined;
  const key = loadPublicKey(path);
  registry.set(id, key);
  return key;
}

/**
 * Reads every `<id>.pub` in `dir`: the registry of members' public signing keys. Other public
 * files (`<id>.kem.pub`, `<id>.nk.pub`, `<id>.tls.pub`) are skipped: a member id has no dot.
 */
export function readRegistry(dir: string): Map<string, PublicSigningKey> {
  const registry = new Map<string, PublicSigningKey>();
  for (const name of readdirSync(dir)) {
    if (/^[A-Za-z0-9_-]+\.pub$/.test(name)) registry.set(name.slice(0, -4), loadPublicKey(join(dir, name)));
  }
  return registry;
}

/**
 * The NATS credential files `member` connects with (see `nats-credentials.ts` for the layout):
 * - TLS whenever a server URL is `tls://` or `nats.tls` is set; each absent `nats.tls` field
 *   defaults to `<keysDir>/ca.crt`, `<keysDir>/<member>.tls.crt`, `<keysDir>/<member>.tls.key`;
 * - `nats.credentials`, else `nats.nkeySeed`, else `<keysDir>/<member>.nk` when it exists (no
 *   authentication otherwise, for servers without users).
 */
export function memberNatsFiles(config: CohortConfig, member: string, keysDir?: string): NatsAuthFiles {
  const dir = keysDir ?? config.members?.keysDir ?? 'keys';
  const nats = config.nats;
  const paths = memberNatsPaths(dir, member);
  const useTls = nats.tls !== undefined || nats.servers.some((s) => s.startsWith('tls://'));
  const seed = nats.nkeySeed ?? (existsSync(paths.seed) ? paths.seed : undefined);
  return {
    ...(useTls
      ? {
          tls: {
            ca: nats.tls?.ca ?? federationTlsPaths(dir).caCert,
            cert: nats.tls?.cert ?? paths.tlsCert,
            key: nats.tls?.key ?? paths.tlsKey,
          },
        }
      : {}),
    ...(nats.credentials !== undefined
      ? { credentials: nats.credentials }
      : seed !== undefined
        ? { nkeySeedFile: seed }
        : {}),
  };
}

/**
 * Options for a raw `connect()` of `@nats-io/transport-node` as `member` (servers, name, its inbox
 * prefix, TLS and NKEY authenticator from {@link memberNatsFiles}): for tools and tests that need a
 * bare connection with a member's real credentials.
 */
export function memberConnectOptions(
  config: CohortConfig,
  member: string,
  keysDir?: string,
): NodeConnectionOptions {
  return {
    servers: [...config.nats.servers],
    name: member,
    inboxPrefix: federationSubjects(config.federation.id).inboxPrefix(member),
    ...natsAuthOptions(memberNatsFiles(config, member, keysDir)),
  };
}

/**
 * Opens a member: checks its role, loads its signing key and the registry, connects to NATS with
 * the member's credentials ({@link memberNatsFiles}: mutual TLS and its NKEY), and builds the CKKS
 * context (public parameters only).
 */
export async function openMember(
  config: CohortConfig,
  member: string,
  keysDir?: string,
): Promise<MemberContext> {
  const role = roleOf(config, member);
  const members = config.members!;
  const dir = keysDir ?? members.keysDir;
  const signing = loadSigningKeyPair(join(dir, `${member}.key`));
  const registry = readRegistry(dir);
  const memberIds = new Set([
    members.coordinator,
    ...members.aggregators.map((a) => a.id),
    ...members.sites.map((s) => s.id),
  ]);
  const log = createLogger({ level: config.log.level, name: `cohort-${role}`, base: { member } });
  const subjects = federationSubjects(config.federation.id);
  const transport = await connectTransport({
    servers: [...config.nats.servers],
    name: member,
    inboxPrefix: subjects.inboxPrefix(member),
    ...memberNatsFiles(config, member, dir),
    maxRetry: config.nats.maxRetry,
    timeoutMs: config.nats.timeoutMs,
  });
  const ckks = await getCkksContext({
    polyModulusDegree: config.crypto.ckks.polyModulusDegree as 4096 | 8192 | 16384,
    coeffModulus: config.crypto.ckks.coeffModulus,
    scaleBits: config.crypto.ckks.scaleBits,
    exactBits: config.crypto.ckks.exactBits,
  });
  return {
    config,
    members,
    member,
    role,
    signing,
    registry,
    keys: (s) => registry.get(s) ?? enrolledKey(registry, dir, memberIds, s),
    keysDir: dir,
    transport,
    subjects,
    ckks,
    log,
    async close() {
      await transport.close();
    },
  };
}
