import protobuf from 'protobufjs';
import { decodeKemPublicKey, encodeKemPublicKey } from '../../crypto/kem/index.ts';
import { decodePublicKey, encodePublicKey, type PublicSigningKey } from '../../crypto/signature/index.ts';
import { PROTO_PATH } from '../protocol/index.ts';
import { assertUserNkey } from '../transport/index.ts';
import { RegistryError } from './registry-error.ts';

const root = protobuf.loadSync(PROTO_PATH);
const MemberRegistryType = root.lookupType('cohort.v1.MemberRegistry');

/** Roles a registry lists (the registry officer is a separate field, not a member). */
export const REGISTRY_ROLES = ['coordinator', 'aggregator', 'site', 'auditor'] as const;

/** A member's role in the federation. */
export type RegistryRole = (typeof REGISTRY_ROLES)[number];

/** Member ids: as in the configuration (a NATS subject token); `public` names the shared key folder. */
const MEMBER_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The one id no member may have: `keys/public/` is the shared folder of public files. */
export const RESERVED_MEMBER_IDS: readonly string[] = Object.freeze(['public', 'officer']);

/** One member of the registry with its public keys. */
export interface RegistryMember {
  readonly id: string;
  readonly role: RegistryRole;
  /** Its public signing key (Falcon-512 or ML-DSA-65, tagged). */
  readonly signingKey: PublicSigningKey;
  /** Its raw ML-KEM-768 encapsulation key: required for sites, absent for other roles. */
  readonly kemKey: Uint8Array | undefined;
  /** The public NKEY of its NATS user (`U…`), when the registry names it. */
  readonly nkey: string | undefined;
  /** First round its key is valid for (0: from the start). */
  readonly validFromRound: number;
}

/** The federation's members and their public keys (cohort.proto `MemberRegistry`). */
export interface MemberRegistry {
  readonly federation: string;
  /** Sorted by id. */
  readonly members: readonly RegistryMember[];
  /** The registry officer's public signing key: it signs the registry and every change of it. */
  readonly officerKey: PublicSigningKey;
  readonly issuedUnixMs: number;
}

function invalid(message: string, details: Record<string, unknown> = {}, cause?: unknown): RegistryError {
  return new RegistryError('REGISTRY_INVALID', message, { details, cause });
}

/** Throws `REGISTRY_INVALID` unless `id` is a usable member id. */
export function assertMemberId(id: unknown, what = 'member id'): asserts id is string {
  if (typeof id !== 'string' || !MEMBER_ID.test(id)) {
    throw invalid(`${what} ${JSON.stringify(id)} must be 1-64 characters of A-Z, a-z, 0-9, "_" and "-"`, {
      id,
    });
  }
  if (RESERVED_MEMBER_IDS.includes(id)) {
    throw invalid(`${what} ${JSON.stringify(id)} is reserved (it names a shared key folder)`, { id });
  }
}

/** Throws `REGISTRY_INVALID` unless `role` is one of {@link REGISTRY_ROLES}. */
export function assertRole(role: unknown, what = 'role'): asserts role is RegistryRole {
  if (!REGISTRY_ROLES.includes(role as RegistryRole)) {
    throw invalid(`${what} ${JSON.stringify(role)} is not one of ${REGISTRY_ROLES.join(', ')}`, { role });
  }
}

/**
 * Checks a registry's structure: federation id, member ids unique and valid, roles, exactly one
 * coordinator, a KEM key for every site and none for others, NKEYs well formed, rounds.
 *
 * @throws RegistryError `REGISTRY_INVALID` naming the member and the problem.
 */
export function validateRegistry(registry: MemberRegistry): void {
  if (typeof registry.federation !== 'string' || !MEMBER_ID.test(registry.federation)) {
    throw invalid(`federation ${JSON.stringify(registry.federation)} is not a valid federation id`);
  }
  if (!Number.isSafeInteger(registry.issuedUnixMs) || registry.issuedUnixMs < 0) {
    throw invalid(`issued time ${registry.issuedUnixMs} is not a valid time`);
  }
  const ids = new Set<string>();
  let coordinators = 0;
  for (const m of registry.members) {
    assertMemberId(m.id);
    if (ids.has(m.id)) throw invalid(`member ${m.id} is listed twice`, { id: m.id });
    ids.add(m.id);
    assertRole(m.role, `member ${m.id}: role`);
    if (m.role === 'coordinator') coordinators++;
    if (m.role === 'site' && m.kemKey === undefined) {
      throw invalid(`site ${m.id} has no ML-KEM-768 key`, { id: m.id });
    }
    if (m.role !== 'site' && m.kemKey !== undefined) {
      throw invalid(`${m.role} ${m.id} has an ML-KEM-768 key; only sites receive wrapped secrets`, {
        id: m.id,
      });
    }
    if (m.nkey !== undefined) assertNkey(m.nkey, `member ${m.id}: nkey`);
    if (!Number.isSafeInteger(m.validFromRound) || m.validFromRound < 0) {
      throw invalid(`member ${m.id}: valid-from round ${m.validFromRound} is not a round`, { id: m.id });
    }
  }
  if (coordinators !== 1)
    throw invalid(`the registry lists ${coordinators} coordinators; exactly one is needed`);
}

/** Throws `REGISTRY_INVALID` unless `nkey` is a public user NKEY. */
export function assertNkey(nkey: unknown, what: string): asserts nkey is string {
  try {
    assertUserNkey(what, nkey);
  } catch (cause) {
    throw invalid((cause as Error).message, { what }, cause);
  }
}

/**
 * Serializes `registry` (members sorted by id) as the `MemberRegistry` bytes the officer signs.
 *
 * @throws RegistryError `REGISTRY_INVALID` (see {@link validateRegistry}).
 */
export function encodeMemberRegistry(registry: MemberRegistry): Uint8Array {
  validateRegistry(registry);
  const members = [...registry.members].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const message = MemberRegistryType.fromObject({
    federation: registry.federation,
    members: members.map((m) => ({
      id: m.id,
      role: m.role,
      signingKey: encodePublicKey(m.signingKey),
      kemKey: m.kemKey === undefined ? new Uint8Array(0) : encodeKemPublicKey(m.kemKey),
      nkey: m.nkey ?? '',
      validFromRound: m.validFromRound,
    })),
    officerKey: encodePublicKey(registry.officerKey),
    issuedUnixMs: registry.issuedUnixMs,
  });
  return MemberRegistryType.encode(message).finish();
}

interface RawEntry {
  id: string;
  role: string;
  signingKey: Uint8Array;
  kemKey: Uint8Array;
  nkey: string;
  validFromRound: number;
}

/**
 * Parses `MemberRegistry` bytes (untrusted until its signature is checked) and validates them.
 *
 * @throws RegistryError `REGISTRY_INVALID` naming the problem.
 */
export function decodeMemberRegistry(bytes: Uint8Array): MemberRegistry {
  let raw: { federation: string; members: RawEntry[]; officerKey: Uint8Array; issuedUnixMs: number };
  try {
    raw = MemberRegistryType.toObject(MemberRegistryType.decode(bytes), {
      longs: Number,
      defaults: true,
      arrays: true,
    }) as typeof raw;
  } catch (cause) {
    throw invalid(`not a MemberRegistry: ${(cause as Error).message}`, {}, cause);
  }
  const key = <T>(what: string, decode: () => T): T => {
    try {
      return decode();
    } catch (cause) {
      throw invalid(`${what}: ${(cause as Error).message}`, { what }, cause);
    }
  };
  const members: RegistryMember[] = raw.members.map((e) => ({
    id: e.id,
    role: e.role as RegistryRole,
    signingKey: key(`member ${e.id}: signing key`, () => decodePublicKey(e.signingKey)),
    kemKey:
      e.kemKey.length === 0 ? undefined : key(`member ${e.id}: KEM key`, () => decodeKemPublicKey(e.kemKey)),
    nkey: e.nkey === '' ? undefined : e.nkey,
    validFromRound: e.validFromRound,
  }));
  for (let i = 1; i < members.length; i++) {
    if (!(members[i - 1]!.id < members[i]!.id)) throw invalid('members are not sorted by id');
  }
  const registry: MemberRegistry = {
    federation: raw.federation,
    members,
    officerKey: key('officer key', () => decodePublicKey(raw.officerKey)),
    issuedUnixMs: raw.issuedUnixMs,
  };
  validateRegistry(registry);
  return registry;
}
