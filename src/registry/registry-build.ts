import { join } from 'node:path';
import { loadKemPublicKey } from '../../crypto/kem/index.ts';
import { loadPublicKey, type PublicSigningKey } from '../../crypto/signature/index.ts';
import { readKeyFile } from '../../crypto/signature/key-file-io.ts';
import { assertNkey, type MemberRegistry, type RegistryMember, type RegistryRole } from './registry-codec.ts';

/** One member to list: its id and role. */
export interface RegistryMemberSpec {
  readonly id: string;
  readonly role: RegistryRole;
}

/** Reads a public NKEY file (`U…` and a newline) and checks it. */
export function readNkeyFile(path: string): string {
  const nkey = Buffer.from(readKeyFile(path, false)).toString('utf8').trim();
  assertNkey(nkey, path);
  return nkey;
}

/**
 * Builds a registry from the members' public files in `dir`, as they handed them over:
 * `<id>.pub` (signing key, every member), `<id>.kem.pub` (ML-KEM-768, sites) and `<id>.nk.pub`
 * (NKEY, every member). Nothing secret is read.
 *
 * @throws CryptoError `KEY_FILE_UNREADABLE` / `KEY_INVALID` naming a missing or bad file;
 *   RegistryError `REGISTRY_INVALID` for a bad NKEY.
 */
export function registryFromPublicFiles(input: {
  readonly federation: string;
  readonly members: readonly RegistryMemberSpec[];
  readonly dir: string;
  readonly officerKey: PublicSigningKey;
  readonly validFromRound?: number;
  readonly issuedUnixMs?: number;
}): MemberRegistry {
  const members: RegistryMember[] = input.members.map(({ id, role }) => ({
    id,
    role,
    signingKey: loadPublicKey(join(input.dir, `${id}.pub`)),
    kemKey: role === 'site' ? loadKemPublicKey(join(input.dir, `${id}.kem.pub`)) : undefined,
    nkey: readNkeyFile(join(input.dir, `${id}.nk.pub`)),
    validFromRound: input.validFromRound ?? 0,
  }));
  return {
    federation: input.federation,
    members,
    officerKey: input.officerKey,
    issuedUnixMs: input.issuedUnixMs ?? Date.now(),
  };
}
