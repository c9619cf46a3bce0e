export { type AdminListenSettings, isLoopbackHost, plaintextAdminProblem } from './admin-listen.ts';
export { type ConfigIssue, configErrorMap } from './config-issues.ts';
export {
  classText,
  DATA_KINDS,
  type DataContract,
  type DataContractData,
  type DataContractInput,
  type DataKind,
  dataContractSchema,
  FEATURE_TYPES,
  type FeatureType,
  MAX_CONTRACT_CLASSES,
  STANDARDIZE_MODES,
} from './data-contract-schema.ts';
export { deepFreeze } from './deep-freeze.ts';
export { formatPath, parseDottedPath } from './format-path.ts';
export { type LoadConfigOptions, loadConfig, loadYamlConfig } from './load-config.ts';
export {
  checkSiteConfig,
  loadSiteConfig,
  type ParseSiteConfigOptions,
  parseSiteConfig,
  SITE_ENV_PREFIX,
} from './load-site-config.ts';
export { type ConfigOverride, ENV_PREFIX, envOverrides, flagOverrides } from './overrides.ts';
export { type ParseConfigOptions, parseConfig, parseWithSchema } from './parse-config.ts';
export { renderConfig } from './render-config.ts';
export {
  bootstrapConfigSchema,
  CODEC_BITS,
  type CohortConfig,
  type CohortConfigData,
  type CohortConfigInput,
  cohortConfigSchema,
  DEFAULT_KEY_SCHEME,
  type DeepReadonly,
  FEDERATION_ID_PATTERN,
  KEY_SCHEMES,
  SIGNATURE_ALGORITHMS,
  type SignatureAlgorithm,
} from './schema.ts';
export { POLY_MODULUS_DEGREES, type PolyModulusDegree, SEAL_MAX_COEFF_MODULUS_BITS } from './seal-limits.ts';
export {
  type SiteConfig,
  type SiteConfigData,
  type SiteConfigInput,
  siteConfigSchema,
} from './site-config-schema.ts';
