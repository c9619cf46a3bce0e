import protobuf from 'protobufjs';
import { sha256Hex } from '../../crypto/digest/index.ts';
import { type SigningKeyPair, sign, verify } from '../../crypto/signature/index.ts';
import { PROTO_PATH } from '../protocol/index.ts';
import { decodeMemberRegistry, encodeMemberRegistry, type MemberRegistry } from './registry-codec.ts';
import { RegistryError } from './registry-error.ts';

const root = protobuf.loadSync(PROTO_PATH);
const SignedRegistryType = root.lookupType('cohort.v1.SignedRegistry');

/** Signature domain of the registry file: the officer's signature over the `MemberRegistry` bytes. */
export const REGISTRY_DOMAIN = 'registry';

/** Largest registry file accepted (about 4 KiB a member with ML-DSA-65 keys). */
export const REGISTRY_MAX_BYTES = 16 * 1024 * 1024;

/** A registry whose officer signature verified, with the exact file bytes and their SHA-256. */
export interface VerifiedRegistry {
  readonly registry: MemberRegistry;
  /** The registry file's bytes (a `SignedRegistry`). */
  readonly bytes: Uint8Array;
  /** SHA-256 of {@link bytes}, lowercase hex: what `members.registry.sha256` pins. */
  readonly sha256: string;
}

/**
 * Signs `registry` with the registry officer's key and returns the registry file's bytes (a
 * `SignedRegistry`: the exact `MemberRegistry` bytes and the signature over them under the domain
 * {@link REGISTRY_DOMAIN}). The registry must name `officer`'s public key as its officer.
 *
 * @throws RegistryError `REGISTRY_INVALID` (structure, or another officer key than `officer`).
 */
export function signRegistry(registry: MemberRegistry, officer: SigningKeyPair): Uint8Array {
  if (registry.officerKey.keyId !== officer.keyId) {
    throw new RegistryError(
      'REGISTRY_INVALID',
      `the registry names officer key ${registry.officerKey.keyId}, the signing key is ${officer.keyId}`,
    );
  }
  const body = encodeMemberRegistry(registry);
  const signature = sign(officer, REGISTRY_DOMAIN, body);
  return SignedRegistryType.encode(SignedRegistryType.fromObject({ registry: body, signature })).finish();
}

/**
 * Opens registry file bytes: decodes the `SignedRegistry`, decodes and validates the registry, and
 * verifies the officer's signature with the officer key the registry names (a self-signed file:
 * members trust it through the SHA-256 pinned in their configuration). `source` names the file in
 * errors.
 *
 * @throws RegistryError `REGISTRY_INVALID` or `REGISTRY_SIGNATURE_INVALID`, naming `source`.
 */
export function openRegistry(bytes: Uint8Array, source = 'registry'): VerifiedRegistry {
  if (!(bytes instanceof Uint8Array) || bytes.length > REGISTRY_MAX_BYTES) {
    throw new RegistryError(
      'REGISTRY_INVALID',
      `${source}: not a registry of at most ${REGISTRY_MAX_BYTES} bytes`,
      {
        details: { source },
      },
    );
  }
  let signed: { registry: Uint8Array; signature: Uint8Array };
  try {
    signed = SignedRegistryType.toObject(SignedRegistryType.decode(bytes), {
      defaults: true,
    }) as typeof signed;
  } catch (cause) {
    throw new RegistryError(
      'REGISTRY_INVALID',
      `${source}: not a signed registry: ${(cause as Error).message}`,
      {
        cause,
        details: { source },
      },
    );
  }
  let registry: MemberRegistry;
  try {
    registry = decodeMemberRegistry(signed.registry);
  } catch (cause) {
    throw new RegistryError('REGISTRY_INVALID', `${source}: ${(cause as Error).message}`, {
      cause,
      details: { source },
    });
  }
  if (!verify(registry.officerKey, REGISTRY_DOMAIN, signed.registry, signed.signature)) {
    throw new RegistryError(
      'REGISTRY_SIGNATURE_INVALID',
      `${source}: the officer's signature (key ${registry.officerKey.keyId}) does not verify`,
      { details: { source, officer: registry.officerKey.keyId } },
    );
  }
  return { registry, bytes: Uint8Array.from(bytes), sha256: sha256Hex(bytes) };
}
