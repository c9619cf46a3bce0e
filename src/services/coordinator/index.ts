export {
  type CoordinatorEvent,
  type CoordinatorHandle,
  type CoordinatorOptions,
  type CoordinatorStats,
  type CoordinatorSummary,
  type RoundSummary,
  startCoordinator,
} from './coordinator-service.ts';
export { federationGenesis, modelSpecFor } from './genesis.ts';
export {
  aggregateDigest,
  decodeAggregateObject,
  decodeRoundParams,
  encodeAggregateObject,
  encodeRoundParams,
  ROUND_PARAMS_DOMAIN,
  type RoundParams,
} from './round-params.ts';
