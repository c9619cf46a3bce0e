export {
  memberKeyDir,
  memberSigningKeyFile,
  PUBLIC_KEY_DIR,
  publicFile,
  publicKeyDir,
} from './key-layout.ts';
export { type RegistryMemberSpec, readNkeyFile, registryFromPublicFiles } from './registry-build.ts';
export {
  decodeRegistryChangeBody,
  decodeRegistryChangeRecord,
  encodeRegistryChangeBody,
  encodeRegistryChangeRecord,
  openRegistryChange,
  REGISTRY_CHANGE_DOMAIN,
  REGISTRY_CHANGE_KINDS,
  REGISTRY_CHANGE_MAX_BYTES,
  type RegistryChangeBody,
  type RegistryChangeKind,
  type RegistryChangeRecord,
  sealRegistryChange,
  validateRegistryChange,
} from './registry-change.ts';
export {
  assertMemberId,
  decodeMemberRegistry,
  encodeMemberRegistry,
  type MemberRegistry,
  REGISTRY_ROLES,
  RESERVED_MEMBER_IDS,
  type RegistryMember,
  type RegistryRole,
  validateRegistry,
} from './registry-codec.ts';
export { REGISTRY_ERROR_CODES, RegistryError, type RegistryErrorCode } from './registry-error.ts';
export { loadRegistry, REGISTRY_FILE, type RegistryPin, writeRegistry } from './registry-file.ts';
export {
  openRegistry,
  REGISTRY_DOMAIN,
  REGISTRY_MAX_BYTES,
  signRegistry,
  type VerifiedRegistry,
} from './registry-sign.ts';
export { type AppliedRegistryChange, type KeyEpoch, type MemberKeys, RegistryView } from './registry-view.ts';
