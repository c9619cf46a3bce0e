export {
  type AggregatorOptions,
  type AggregatorService,
  type AggregatorState,
  type AggregatorStats,
  type PartialReport,
  startAggregator,
} from './aggregator-service.ts';
export {
  CONTRIBUTION_ERROR_CODES,
  ContributionError,
  type ContributionErrorCode,
} from './contribution-error.ts';
export {
  type ContributionReaderInput,
  contributionReader,
  decodeContribution,
  encodeContribution,
  maxContributionFrameBytes,
  openContribution,
  type StoredContribution,
} from './contribution-store.ts';
export { type ContributionWriter, contributionWriter } from './contribution-writer.ts';
export { type AcceptOutcome, RoundCollector, type RoundOpenBody } from './round-collector.ts';
export { AGGREGATOR_ACK } from './site-update-intake.ts';
