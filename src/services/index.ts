export { createLocalDeployment, type LocalDeployment } from './deployment.ts';
export {
  type CeremonyInput,
  CKKS_KEY_PURPOSE,
  DATA_KEY_PURPOSE,
  type EnrollInput,
  enrollSite,
  loadSiteCkks,
  loadSiteDataKey,
  runKeyCeremony,
} from './key-ceremony.ts';
export { type MemberContext, type MemberRole, openMember, readRegistry, roleOf } from './member-context.ts';
