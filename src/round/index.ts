// The round's vocabulary, shared by every role (coordinator, aggregator, agent) and by the audit,
// the history and the CLI: what a RoundOpen's params mean, the genesis, the aggregate object and
// its digest, a stored contribution, and the intake of signed partials. No role imports another
// role; what they share lives here.
export { aggregateDigest, decodeAggregateObject, encodeAggregateObject } from './aggregate-object.ts';
export {
  type ContributionReaderInput,
  contributionReader,
  decodeContribution,
  encodeContribution,
  maxContributionFrameBytes,
  openContribution,
  type StoredContribution,
} from './contribution.ts';
export {
  CONTRIBUTION_ERROR_CODES,
  ContributionError,
  type ContributionErrorCode,
} from './contribution-error.ts';
export {
  assertShareContext,
  decodeSharesObject,
  encodeSharesObject,
  type MakeSharesInput,
  makeShareBundle,
  makeShareBundleYielding,
  type OpenSharesInput,
  openShareBundle,
  openShareBundleYielding,
  SHARES_DOMAIN,
  type ShareContext,
  shareContextBytes,
  shareContextOf,
  shareRequestObjectName,
  sharesDecryptor,
  sharesObjectName,
  type VerifySharesInput,
  verifyShareBundle,
} from './decryption-shares.ts';
export { federationGenesis, modelSpecFor } from './genesis.ts';
export { type AcceptedPartial, PartialIntake } from './partial-intake.ts';
export {
  decodeRoundParams,
  encodeRoundParams,
  ROUND_PARAMS_DOMAIN,
  ROUND_PRIVACY_TAG,
  ROUND_ROBUST_TAG,
  type RoundParams,
  type RoundPrivacy,
  type RoundRobust,
} from './round-params.ts';
export { blamedDecrypter, SHARES_INVALID_VOTE, sharesInvalidReason } from './shares-blame.ts';
export {
  dealMaxBytes,
  EPOCH_PHASES,
  type EpochRegistry,
  envelopeMaxBytes,
  epochAt,
  epochDealObjectName,
  epochPublicObjectName,
  epochRoster,
  epochShareObjectName,
  epochSites,
  type LoggedEpoch,
  PUBLIC_SHARE_CERT_MAX_BYTES,
  thresholdEpochProblem,
} from './threshold-epoch-record.ts';
