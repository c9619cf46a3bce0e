export {
  createStrategy,
  type ServerStrategy,
  type StrategyResult,
} from './server-strategy.ts';
export {
  type AdaptiveConfigFields,
  type FedAdamConfig,
  type FedAvgConfig,
  type FedProxConfig,
  type FedYogiConfig,
  type ResolvedStrategyConfig,
  resolveStrategyConfig,
  STRATEGY_DEFAULTS,
  STRATEGY_NAMES,
  type StrategyConfig,
  type StrategyName,
} from './strategy-config.ts';
export { assertStrategyState, keepsMoments, type StrategyState } from './strategy-state.ts';
export {
  decodeStrategyState,
  encodeStrategyState,
  STRATEGY_STATE_FORMAT_VERSION,
  STRATEGY_STATE_HEADER_BYTES,
} from './strategy-state-codec.ts';
export { meanFromSum, weightedMeanDelta } from './weighted-mean-delta.ts';
