import protobuf from 'protobufjs';
import { decodeKemPublicKey, encodeKemPublicKey } from '../../crypto/kem/index.ts';
import {
  decodePublicKey,
  encodePublicKey,
  type PublicSigningKey,
  type SigningKeyPair,
  sign,
  verify,
} from '../../crypto/signature/index.ts';
import { PROTO_PATH } from '../protocol/index.ts';
import type { RegistryChangeRecord } from '../protocol/log-record-bodies.ts';
import { assertMemberId, assertNkey, assertRole, type RegistryRole } from './registry-codec.ts';
import { RegistryError } from './registry-error.ts';

export type { RegistryChangeRecord } from '../protocol/log-record-bodies.ts';

const root = protobuf.loadSync(PROTO_PATH);
const BodyType = root.lookupType('cohort.v1.RegistryChangeBody');
const RecordType = root.lookupType('cohort.v1.RegistryChange');

/** Signature domain of a registry change: the officer's signature over the `RegistryChangeBody` bytes. */
export const REGISTRY_CHANGE_DOMAIN = 'registry-change';

/** Largest registry change request accepted (two public keys and a signature fit in 16 KiB). */
export const REGISTRY_CHANGE_MAX_BYTES = 16 * 1024;

/** Kinds of registry change. */
export const REGISTRY_CHANGE_KINDS = ['enroll', 'rotate', 'revoke'] as const;

/** What a registry change does: add a member, replace its keys, or refuse it from a round on. */
export type RegistryChangeKind = (typeof REGISTRY_CHANGE_KINDS)[number];

/** Most characters of a change's reason. */
const MAX_REASON = 256;

/** A registry change (cohort.proto `RegistryChangeBody`), keys decoded. */
export interface RegistryChangeBody {
  readonly federation: string;
  readonly kind: RegistryChangeKind;
  readonly member: string;
  readonly role: RegistryRole;
  /** Enroll, rotate: the member's new public signing key. */
  readonly signingKey: PublicSigningKey | undefined;
  /** Enroll of a site (required), rotate of a site (optional): its new raw ML-KEM-768 key. */
  readonly kemKey: Uint8Array | undefined;
  /** Enroll: its public NKEY (optional). */
  readonly nkey: string | undefined;
  /** First round the change applies to (≥ 1). */
  readonly fromRound: number;
  readonly issuedUnixMs: number;
  readonly reason: string;
}

function invalid(message: string, details: Record<string, unknown> = {}, cause?: unknown): RegistryError {
  return new RegistryError('REGISTRY_INVALID', message, { details, cause });
}

/**
 * Checks a change's structure: kind, member id, role, the keys its kind needs (and no others),
 * round and time.
 *
 * @throws RegistryError `REGISTRY_INVALID` naming the problem.
 */
export function validateRegistryChange(c: RegistryChangeBody): void {
  if (!REGISTRY_CHANGE_KINDS.includes(c.kind)) {
    throw invalid(
      `registry change kind ${JSON.stringify(c.kind)} is not one of ${REGISTRY_CHANGE_KINDS.join(', ')}`,
    );
  }
  if (typeof c.federation !== 'string' || c.federation.length === 0)
    throw invalid('registry change names no federation');
  assertMemberId(c.member, `${c.kind}: member`);
  assertRole(c.role, `${c.kind} ${c.member}: role`);
  if (!Number.isSafeInteger(c.fromRound) || c.fromRound < 1) {
    throw invalid(`${c.kind} ${c.member}: from round ${c.fromRound} must be a round ≥ 1`, {
      member: c.member,
    });
  }
  if (!Number.isSafeInteger(c.issuedUnixMs) || c.issuedUnixMs < 0) {
    throw invalid(`${c.kind} ${c.member}: issued time ${c.issuedUnixMs} is not a time`, { member: c.member });
  }
  if (typeof c.reason !== 'string' || c.reason.length > MAX_REASON) {
    throw invalid(`${c.kind} ${c.member}: reason longer than ${MAX_REASON} characters`, { member: c.member });
  }
  if (c.kind === 'revoke') {
    if (c.signingKey !== undefined || c.kemKey !== undefined || c.nkey !== undefined) {
      throw invalid(`revoke ${c.member} carries keys`, { member: c.member });
    }
    return;
  }
  if (c.signingKey === undefined)
    throw invalid(`${c.kind} ${c.member} names no signing key`, { member: c.member });
  if (c.role !== 'site' && c.kemKey !== undefined) {
    throw invalid(`${c.kind} ${c.member}: a ${c.role} has no ML-KEM-768 key`, { member: c.member });
  }
  if (c.kind === 'enroll' && c.role === 'site' && c.kemKey === undefined) {
    throw invalid(`enroll ${c.member}: a site needs an ML-KEM-768 key`, { member: c.member });
  }
  if (c.nkey !== undefined) assertNkey(c.nkey, `${c.kind} ${c.member}: nkey`);
}

/** Serializes `change` (validated) as the exact `RegistryChangeBody` bytes the officer signs. */
export function encodeRegistryChangeBody(change: RegistryChangeBody): Uint8Array {
  validateRegistryChange(change);
  return BodyType.encode(
    BodyType.fromObject({
      federation: change.federation,
      kind: change.kind,
      member: change.member,
      role: change.role,
      signingKey: change.signingKey === undefined ? new Uint8Array(0) : encodePublicKey(change.signingKey),
      kemKey: change.kemKey === undefined ? new Uint8Array(0) : encodeKemPublicKey(change.kemKey),
      nkey: change.nkey ?? '',
      fromRound: change.fromRound,
      issuedUnixMs: change.issuedUnixMs,
      reason: change.reason,
    }),
  ).finish();
}

/** Parses and validates `RegistryChangeBody` bytes. @throws RegistryError `REGISTRY_INVALID`. */
export function decodeRegistryChangeBody(bytes: Uint8Array): RegistryChangeBody {
  let raw: {
    federation: string;
    kind: string;
    member: string;
    role: string;
    signingKey: Uint8Array;
    kemKey: Uint8Array;
    nkey: string;
    fromRound: number;
    issuedUnixMs: number;
    reason: string;
  };
  try {
    raw = BodyType.toObject(BodyType.decode(bytes), { longs: Number, defaults: true }) as typeof raw;
  } catch (cause) {
    throw invalid(`not a RegistryChangeBody: ${(cause as Error).message}`, {}, cause);
  }
  const key = <T>(what: string, decode: () => T): T => {
    try {
      return decode();
    } catch (cause) {
      throw invalid(
        `${raw.kind} ${raw.member}: ${what}: ${(cause as Error).message}`,
        { member: raw.member },
        cause,
      );
    }
  };
  const change: RegistryChangeBody = {
    federation: raw.federation,
    kind: raw.kind as RegistryChangeKind,
    member: raw.member,
    role: raw.role as RegistryRole,
    signingKey:
      raw.signingKey.length === 0 ? undefined : key('signing key', () => decodePublicKey(raw.signingKey)),
    kemKey: raw.kemKey.length === 0 ? undefined : key('KEM key', () => decodeKemPublicKey(raw.kemKey)),
    nkey: raw.nkey === '' ? undefined : raw.nkey,
    fromRound: raw.fromRound,
    issuedUnixMs: raw.issuedUnixMs,
    reason: raw.reason,
  };
  validateRegistryChange(change);
  return change;
}

/**
 * Signs `change` with the registry officer's key under {@link REGISTRY_CHANGE_DOMAIN}: the record
 * an operator sends the coordinator and the coordinator logs.
 */
export function sealRegistryChange(
  change: RegistryChangeBody,
  officer: SigningKeyPair,
): RegistryChangeRecord {
  const body = encodeRegistryChangeBody(change);
  return { body, officerKeyId: officer.keyId, signature: sign(officer, REGISTRY_CHANGE_DOMAIN, body) };
}

/**
 * Verifies a registry change record with the officer's public key (the one the pinned registry
 * names) and decodes its body.
 *
 * @throws RegistryError `REGISTRY_SIGNATURE_INVALID` (another officer key, a bad signature) or
 *   `REGISTRY_INVALID` (malformed body).
 */
export function openRegistryChange(
  record: RegistryChangeRecord,
  officer: PublicSigningKey,
): RegistryChangeBody {
  if (!(record?.body instanceof Uint8Array) || !(record.signature instanceof Uint8Array)) {
    throw invalid('registry change record lacks its body or signature');
  }
  if (record.officerKeyId !== officer.keyId) {
    throw new RegistryError(
      'REGISTRY_SIGNATURE_INVALID',
      `registry change signed with key ${JSON.stringify(record.officerKeyId)}, the registry's officer key is ${officer.keyId}`,
      { details: { officerKeyId: record.officerKeyId } },
    );
  }
  if (!verify(officer, REGISTRY_CHANGE_DOMAIN, record.body, record.signature)) {
    throw new RegistryError(
      'REGISTRY_SIGNATURE_INVALID',
      "registry change: the officer's signature does not verify",
    );
  }
  return decodeRegistryChangeBody(record.body);
}

/** Serializes a record as a `RegistryChange` message (the request on `cohort.<F>.admin.registry`). */
export function encodeRegistryChangeRecord(record: RegistryChangeRecord): Uint8Array {
  return RecordType.encode(RecordType.fromObject(record)).finish();
}

/** Parses a `RegistryChange` message (at most {@link REGISTRY_CHANGE_MAX_BYTES}); nothing verified yet. */
export function decodeRegistryChangeRecord(bytes: Uint8Array): RegistryChangeRecord {
  if (!(bytes instanceof Uint8Array) || bytes.length > REGISTRY_CHANGE_MAX_BYTES) {
    throw invalid(`a registry change request is at most ${REGISTRY_CHANGE_MAX_BYTES} bytes`);
  }
  try {
    return RecordType.toObject(RecordType.decode(bytes), { defaults: true }) as RegistryChangeRecord;
  } catch (cause) {
    throw invalid(`not a RegistryChange: ${(cause as Error).message}`, {}, cause);
  }
}
