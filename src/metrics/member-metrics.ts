import type { Registry } from 'prom-client';
import { InvalidArgumentError } from '../errors/index.ts';
import type { AgentStats } from '../services/agent/index.ts';
import type { AggregatorStats } from '../services/aggregator/index.ts';
import { type CryptoTimings, createCryptoTimings } from './crypto-timings.ts';
import { type MetricsProvider, ownRegistry, perScrape } from './metrics-provider.ts';
import { countsByLabel, REJECT_REASON_LABELS } from './reject-reasons.ts';
import { scrapedCounter } from './scrape-counter.ts';
import { type TransportStatsReader, transportMetrics } from './transport-metrics.ts';

/** A member's metrics: its registry, where its cryptography reports timings, and the exposition. */
export interface MemberMetrics extends MetricsProvider {
  readonly registry: Registry;
  readonly timings: CryptoTimings;
}

/** Options of {@link createAggregatorMetrics} and {@link createSiteMetrics}. */
export interface MemberMetricsOptions<S> {
  /** Where to register (default: a new registry; never prom-client's global one). */
  readonly registry?: Registry;
  /** The service's live counters, read at each scrape. */
  readonly stats: () => S;
  /** The member's transport counters (`NatsTransport.stats`), read at each scrape. */
  readonly transportStats?: TransportStatsReader;
}

type Reader<S> = () => S;

function assertStats(stats: unknown): void {
  if (typeof stats !== 'function') {
    throw new InvalidArgumentError('options.stats must be a function', {
      details: { name: 'options.stats' },
    });
  }
}

function counter<S>(
  registry: Registry,
  read: Reader<S>,
  name: string,
  help: string,
  value: (s: S) => number,
) {
  scrapedCounter(registry, { name, help }, () => [[{}, value(read())]]);
}

function provider(registry: Registry, fresh: (() => void)[]): Omit<MemberMetrics, 'timings'> {
  return {
    registry,
    contentType: registry.contentType,
    text: () => {
      for (const f of fresh) f();
      return registry.metrics();
    },
  };
}

/**
 * An aggregator's metrics (docs/metrics.md), read from `AggregatorStats` at scrape time:
 * blocks and updates accepted, refusals by reason (`cohort_blocks_rejected_total`, as the
 * coordinator's), partials sent or failed, contributions kept in the updates store or not,
 * heartbeats sent, RoundOpens refused.
 */
export function createAggregatorMetrics(options: MemberMetricsOptions<AggregatorStats>): MemberMetrics {
  assertStats(options?.stats);
  const registry = ownRegistry(options.registry);
  const stats = perScrape(options.stats);
  const read = () => stats.get();
  scrapedCounter(
    registry,
    {
      name: 'cohort_blocks_rejected_total',
      help: 'Blocks and manifests refused, and transport drops, by reason.',
      labelNames: ['reason'],
    },
    () => {
      const s = read();
      const blocks = countsByLabel(s.rejections);
      for (const [label, n] of countsByLabel(s.transportDrops, true))
        blocks.set(label, (blocks.get(label) ?? 0) + n);
      return [...blocks].map(([reason, n]) => [{ reason }, n] as const);
    },
    REJECT_REASON_LABELS.map((reason) => ({ reason })),
  );
  counter(
    registry,
    read,
    'cohort_aggregator_blocks_accepted_total',
    'Site blocks verified and kept.',
    (s) => s.blocksAccepted,
  );
  counter(
    registry,
    read,
    'cohort_aggregator_updates_added_total',
    "Site updates added to a round's sum.",
    (s) => s.updatesAdded,
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_aggregator_partials_sent_total',
      help: 'Partial aggregates by outcome.',
      labelNames: ['outcome'],
    },
    () => [
      [{ outcome: 'sent' }, read().partialsSent],
      [{ outcome: 'failed' }, read().partialsFailed],
      [{ outcome: 'empty' }, read().emptyRounds],
    ],
    [{ outcome: 'sent' }, { outcome: 'failed' }, { outcome: 'empty' }],
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_aggregator_contributions_total',
      help: 'Site updates written to the updates store for the audit (stored), or not (failed: the partial is then not sent).',
      labelNames: ['outcome'],
    },
    () => [
      [{ outcome: 'stored' }, read().contributionsStored],
      [{ outcome: 'failed' }, read().contributionsFailed],
    ],
    [{ outcome: 'stored' }, { outcome: 'failed' }],
  );
  counter(registry, read, 'cohort_heartbeats_sent_total', 'Heartbeats published.', (s) => s.heartbeatsSent);
  counter(
    registry,
    read,
    'cohort_round_opens_refused_total',
    'RoundOpens refused (not signed by the coordinator, other federation, impossible values).',
    (s) => s.roundOpensRefused,
  );
  const fresh = [() => stats.fresh()];
  if (options.transportStats !== undefined) fresh.push(transportMetrics(registry, options.transportStats));
  return { ...provider(registry, fresh), timings: createCryptoTimings(registry) };
}

/**
 * A site agent's metrics (docs/metrics.md), read from `AgentStats` at scrape time: rounds
 * trained and skipped, blocks sent, votes, decisions applied, commits replayed.
 */
export function createSiteMetrics(options: MemberMetricsOptions<AgentStats>): MemberMetrics {
  assertStats(options?.stats);
  const registry = ownRegistry(options.registry);
  const stats = perScrape(options.stats);
  const read = () => stats.get();
  counter(
    registry,
    read,
    'cohort_site_rounds_trained_total',
    'Rounds this site trained for.',
    (s) => s.roundsTrained,
  );
  counter(
    registry,
    read,
    'cohort_site_rounds_skipped_total',
    'RoundOpens naming this site that it skipped (wrong base, no key, busy, deadline).',
    (s) => s.roundsSkipped,
  );
  counter(registry, read, 'cohort_site_blocks_sent_total', 'Update blocks sent.', (s) => s.blocksSent);
  scrapedCounter(
    registry,
    {
      name: 'cohort_site_votes_total',
      help: 'Votes sent: YES, NO, or abstain (the log or a store did not answer in time).',
      labelNames: ['vote'],
    },
    () => [
      [{ vote: 'yes' }, read().votesYes],
      [{ vote: 'no' }, read().votesNo],
      [{ vote: 'abstain' }, read().abstentions],
    ],
    [{ vote: 'yes' }, { vote: 'no' }, { vote: 'abstain' }],
  );
  scrapedCounter(
    registry,
    { name: 'cohort_site_decisions_total', help: 'Decisions applied, by outcome.', labelNames: ['outcome'] },
    () => [
      [{ outcome: 'commit' }, read().commits],
      [{ outcome: 'abort' }, read().aborts],
    ],
    [{ outcome: 'commit' }, { outcome: 'abort' }],
  );
  counter(
    registry,
    read,
    'cohort_site_commits_replayed_total',
    'Commits applied by replaying the log (catch-up).',
    (s) => s.replayed,
  );
  const fresh = [() => stats.fresh()];
  if (options.transportStats !== undefined) fresh.push(transportMetrics(registry, options.transportStats));
  return { ...provider(registry, fresh), timings: createCryptoTimings(registry) };
}
