/**
 * Differential privacy accounting: Rényi DP of the Poisson-subsampled Gaussian mechanism and its
 * conversion to (ε, δ).
 */
export {
  DEFAULT_RDP_ORDERS,
  type RdpConversion,
  rdpToEpsilon,
  sampledGaussianRdp,
} from './rdp-accountant.ts';
export { type PrivacySpent, RdpLedger } from './rdp-ledger.ts';
export { logAbsBinomial, logAbsGamma, logErfc } from './special-functions.ts';
