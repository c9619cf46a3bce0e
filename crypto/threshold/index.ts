export { commonRandomPoly } from './common-random-poly.ts';
export { combineShares, decryptionShare, roundDecryptionKey } from './decryption-share.ts';
export { packedBytes, packWords, unpackWords } from './packed-words.ts';
export { PositionLedger } from './position-ledger.ts';
export {
  centredBinomialCoefficients,
  ternaryCoefficients,
  uniformNoiseCoefficients,
} from './rlwe-samplers.ts';
export {
  addInto,
  assertPoly,
  centredIntegers,
  expandPoly,
  mulAddInto,
  type RnsPoly,
  type RnsShape,
  randomPoly,
  subInto,
  wipe,
  zeroPoly,
} from './rns-poly.ts';
export { assertPoints, lagrangeAtZero, scaleByFraction, shareSecret } from './shamir.ts';
export { SiteSecret } from './site-secret.ts';
export { getThresholdContext, ThresholdContext } from './threshold-context.ts';
export {
  assertRoster,
  epochId,
  epochIdOfDigests,
  epochSeed,
  fingerprintOfDigest,
  holds,
  publicShareCrp,
  publicShareFingerprint,
  rosterHolders,
  type ThresholdRoster,
} from './threshold-epoch.ts';
export {
  decodeThresholdKey,
  encodeThresholdKey,
  loadThresholdKey,
  saveThresholdKey,
  type ThresholdKeyMaterial,
  wipeThresholdKey,
} from './threshold-key-file.ts';
export {
  SharesDecryptor,
  ThresholdLaneContext,
  ThresholdLaneKeyset,
  ThresholdLaneVector,
} from './threshold-lanes.ts';
export {
  assertThresholdParams,
  DEFAULT_THRESHOLD_PARAMS,
  defaultThreshold,
  FRESH_ERROR_BOUND,
  floodingBits,
  floodingBound,
  ROUNDING_MARGIN_SIGMAS,
  type ThresholdParams,
  thresholdLimbs,
  thresholdParamsId,
  thresholdSlotSigma,
} from './threshold-params.ts';
