/**
 * Differential privacy: Rényi DP accounting of the Poisson-subsampled Gaussian mechanism and of the
 * distributed Skellam mechanism (each site clips its update, rounds it to integer levels within a
 * norm bound, and adds its share of Skellam noise, so only the sum carries the full noise), their
 * conversion to (ε, δ), and the running budget a federation charges round by round.
 */
export { MAX_ROUNDING_TRIES, roundedNormBound, roundWithinNorm } from './conditional-rounding.ts';
export {
  DEFAULT_RDP_ORDERS,
  type RdpConversion,
  rdpToEpsilon,
  sampledGaussianRdp,
} from './rdp-accountant.ts';
export { type PrivacyCharge, type PrivacySpent, RdpLedger } from './rdp-ledger.ts';
export { calibrateNoiseMultiplier, type EpsilonTarget, skellamEpsilon } from './skellam-calibration.ts';
export {
  addSkellamNoise,
  samplePoisson,
  sampleSkellam,
  skellamRangeFor,
  skellamTailBound,
} from './skellam-noise.ts';
export {
  DEFAULT_LEVELS_PER_SQRT_DIMENSION,
  DEFAULT_NOISE_TAIL,
  DEFAULT_ROUNDING_BETA,
  planSkellamDp,
  type SkellamDpPlan,
  type SkellamDpSettings,
  skellamRoundCharge,
} from './skellam-plan.ts';
export {
  INTEGER_RDP_ORDERS,
  type IntegerSensitivity,
  poissonSubsampledRdp,
  sampledSkellamRdp,
  skellamRdp,
} from './skellam-rdp.ts';
export { logAbsBinomial, logAbsGamma, logErfc } from './special-functions.ts';
export { cryptoUniformSource, seededUniformSource, type UniformSource } from './uniform-source.ts';
