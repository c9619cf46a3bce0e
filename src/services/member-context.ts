import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
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
  type NatsTransport,
} from '../transport/index.ts';

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

/** Reads every `<id>.pub` in `dir`: the registry of members' public signing keys. */
export function readRegistry(dir: string): Map<string, PublicSigningKey> {
  const registry = new Map<string, PublicSigningKey>();
  for (const name of readdirSync(dir)) {
    if (name.endsWith('.pub') && !name.endsWith('.kem.pub'))
      registry.set(name.slice(0, -4), loadPublicKey(join(dir, name)));
  }
  return registry;
}

/**
 * Opens a member: checks its role, loads its signing key and the registry, connects to NATS as
 * the user named after the member (password from `<keysDir>/<id>.nats` when present), and builds
 * the CKKS context (public parameters only).
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
  const passFile = join(dir, `${member}.nats`);
  const pass = existsSync(passFile) ? readFileSync(passFile, 'utf8').trim() : undefined;
  const transport = await connectTransport({
    servers: [...config.nats.servers],
    name: member,
    inboxPrefix: subjects.inboxPrefix(member),
    ...(pass === undefined ? {} : { user: member, pass }),
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
