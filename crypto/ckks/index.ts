export { CkksContext, getCkksContext, type SealCiphertext } from './ckks-context.ts';
export { CkksKeyset } from './ckks-keyset.ts';
export {
  FRESH_SLOT_NOISE_SIGMA_N8192_S16,
  LANE_SUM_TOLERANCE,
  minScaleBits,
  NOISE_MARGIN_SIGMAS,
  slotNoiseSigma,
} from './ckks-noise.ts';
export {
  assertCkksParams,
  type CkksParams,
  ckksParamsId,
  DEFAULT_CKKS_PARAMS,
  slotCount,
} from './ckks-params.ts';
export {
  PLAIN_LANES_DOMAIN,
  PlainLaneContext,
  PlainLaneKeyset,
  PlainLaneVector,
  plainLanesId,
} from './plain-lanes.ts';
export { loadSeal } from './seal-runtime.ts';
