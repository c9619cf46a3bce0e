export { createLocalDeployment, type LocalDeployment } from './deployment.ts';
export {
  type CeremonyInput,
  type CeremonyResult,
  CKKS_KEY_PURPOSE,
  DATA_KEY_PURPOSE,
  type EnrolledSiteFiles,
  type EnrollInput,
  enrollSite,
  loadSiteCkks,
  loadSiteDataKey,
  loadSiteKeyset,
  runKeyCeremony,
} from './key-ceremony.ts';
export {
  ckksParamsOf,
  loadPinnedRegistry,
  type MemberContext,
  type MemberRole,
  memberConnectOptions,
  memberNatsFiles,
  type OpenMemberOptions,
  openMember,
  readRegistry,
  roleOf,
} from './member-context.ts';
export {
  createFederationTls,
  type FederationTlsPaths,
  federationAuthorizationSpec,
  federationTlsPaths,
  generateMemberNatsKeys,
  issueMemberCertificate,
  loadCertificateAuthority,
  type MemberNatsPaths,
  memberNatsPaths,
  readMemberNkey,
} from './nats-credentials.ts';
