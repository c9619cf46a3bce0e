export {
  type AggregatorOptions,
  type AggregatorService,
  type AggregatorState,
  type AggregatorStats,
  type PartialReport,
  startAggregator,
} from './aggregator-service.ts';
export { type ContributionWriter, contributionWriter } from './contribution-writer.ts';
export { type AcceptOutcome, RoundCollector, type RoundOpenBody } from './round-collector.ts';
export { AGGREGATOR_ACK } from './site-update-intake.ts';
