import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';
import {
  BREAKER_LEVELS,
  type CoordinatorEvent,
  type CoordinatorStats,
} from '../services/coordinator/index.ts';
import { type CryptoTimings, createCryptoTimings } from './crypto-timings.ts';
import { type MetricsProvider, ownRegistry, perScrape } from './metrics-provider.ts';
import { countsByLabel, REJECT_REASON_LABELS } from './reject-reasons.ts';
import { type PhaseObservation, ROUND_PHASES, RoundPhaseClock } from './round-phases.ts';
import { scrapedCounter, scrapedGauge } from './scrape-counter.ts';
import { type TransportStatsReader, transportMetrics } from './transport-metrics.ts';
import { VersionDriftTracker } from './version-drift.ts';

/** Upper bounds of `cohort_sync_latency_seconds`: the 200 ms target is a bucket boundary. */
export const SYNC_LATENCY_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5,
]);

/** Upper bounds of `cohort_round_duration_seconds` and `cohort_round_phase_duration_seconds`. */
export const ROUND_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
]);

const COORDINATOR_PHASES: readonly CoordinatorStats['phase'][] = [
  'starting',
  'waiting',
  'collecting',
  'sharing',
  'voting',
  'deciding',
  'done',
];

/** Options of {@link createCoordinatorMetrics}. */
export interface CoordinatorMetricsOptions {
  /** Where to register (default: a new registry; never prom-client's global one). */
  readonly registry?: Registry;
  /** The coordinator's live counters (`CoordinatorHandle.stats`), read at each scrape. */
  readonly stats: () => CoordinatorStats;
  /** The coordinator's transport counters (`NatsTransport.stats`), read at each scrape. */
  readonly transportStats?: TransportStatsReader;
  /** Parameters of the model (default: `stats().parameters`): the float32 size of an update is 4 × this. */
  readonly parameters?: number;
  /** Configured aggregator ids: their per-aggregator series exist at 0 before their first partial. */
  readonly aggregators?: readonly string[];
  /** The coordinator's `switchWaitMs` (default 2000): sites not switched after it count as drift. */
  readonly switchWaitMs?: number;
  /** Clock, ms since the epoch (default `Date.now`). */
  readonly now?: () => number;
}

/** The coordinator's metrics: a registry, the event listener that feeds it, and its exposition. */
export interface CoordinatorMetrics extends MetricsProvider {
  readonly registry: Registry;
  /** Feeds one coordinator event (pass it as, or call it from, `CoordinatorOptions.onEvent`). Never throws. */
  onEvent(event: CoordinatorEvent): void;
  /** Where signature verifications and CKKS operations report their durations. */
  readonly timings: CryptoTimings;
}

/**
 * The coordinator's Prometheus metrics (docs/metrics.md): histograms and counters fed by its
 * events (round phases, sync latency, compression, per-aggregator load, version drift, last
 * commit) and collectors that read its `stats()` (and its transport's) at scrape time, adding
 * what grew since the last scrape rather than counting a second time.
 */
export function createCoordinatorMetrics(options: CoordinatorMetricsOptions): CoordinatorMetrics {
  if (typeof options?.stats !== 'function') {
    throw new InvalidArgumentError('options.stats must be a function', {
      details: { name: 'options.stats' },
    });
  }
  if (options.parameters !== undefined)
    assertInteger('options.parameters', options.parameters, 1, Number.MAX_SAFE_INTEGER);
  const switchWaitMs = options.switchWaitMs ?? 2000;
  assertInteger('options.switchWaitMs', switchWaitMs, 0, Number.MAX_SAFE_INTEGER);
  const registry = ownRegistry(options.registry);
  const now = options.now ?? Date.now;
  const stats = perScrape(options.stats);
  const live = () => new Set(stats.get().liveSites);

  // ---- from events ----
  const phases = new RoundPhaseClock();
  const drift = new VersionDriftTracker(switchWaitMs);
  // A round's phases and its whole duration are unlike series: one name each (one kind of
  // observation per name), so `sum` over the phases never adds the total in.
  const phaseDuration = new Histogram<'phase'>({
    name: 'cohort_round_phase_duration_seconds',
    help: 'Round phases: collect (RoundOpen to PREPARE, or to an early ABORT), vote (PREPARE to decision).',
    labelNames: ['phase'],
    buckets: [...ROUND_DURATION_BUCKETS],
    registers: [registry],
  });
  for (const phase of ROUND_PHASES) if (phase !== 'total') phaseDuration.zero({ phase });
  const roundDuration = new Histogram({
    name: 'cohort_round_duration_seconds',
    help: 'Decided rounds, RoundOpen logged to decision published (rollbacks and restart aborts included).',
    buckets: [...ROUND_DURATION_BUCKETS],
    registers: [registry],
  });
  const observePhase = (o: PhaseObservation): void => {
    if (o.phase === 'total') roundDuration.observe(o.seconds);
    else phaseDuration.observe({ phase: o.phase }, o.seconds);
  };
  const syncLatency = new Histogram({
    name: 'cohort_sync_latency_seconds',
    help: 'Parameter-sync latency: decision published to a site switched to the commit (one per site and commit; target P99 < 0.2 s).',
    buckets: [...SYNC_LATENCY_BUCKETS],
    registers: [registry],
  });
  const sentBytes = new Counter({
    name: 'cohort_update_sent_bytes_total',
    help: 'Bytes of updates the sites sent in decided training rounds, as their votes report them.',
    registers: [registry],
  });
  const float32Bytes = new Counter({
    name: 'cohort_update_float32_bytes_total',
    help: 'Bytes the same updates would take as float32: participants x parameters x 4.',
    registers: [registry],
  });
  const votes = new Counter<'vote'>({
    name: 'cohort_votes_total',
    help: 'Votes counted: YES, NO, or abstain (the voter could not read what it needs).',
    labelNames: ['vote'],
    registers: [registry],
  });
  for (const vote of ['yes', 'no', 'abstain']) votes.inc({ vote }, 0);
  const partials = new Counter<'aggregator'>({
    name: 'cohort_aggregator_partials_total',
    help: 'Partial aggregates accepted, by aggregator.',
    labelNames: ['aggregator'],
    registers: [registry],
  });
  const partialSites = new Counter<'aggregator'>({
    name: 'cohort_aggregator_partial_sites_total',
    help: 'Site updates inside accepted partial aggregates, by aggregator (divide by partials for sites per partial).',
    labelNames: ['aggregator'],
    registers: [registry],
  });
  const assigned = new Gauge<'aggregator'>({
    name: 'cohort_aggregator_assigned_sites',
    help: 'Sites assigned to each aggregator in the latest RoundOpen.',
    labelNames: ['aggregator'],
    registers: [registry],
  });
  const aggregators = new Set(options.aggregators ?? []);
  for (const aggregator of aggregators) {
    partials.inc({ aggregator }, 0);
    partialSites.inc({ aggregator }, 0);
    assigned.set({ aggregator }, 0);
  }
  const breakerTransitions = new Counter<'from' | 'to'>({
    name: 'cohort_breaker_transitions_total',
    help: 'Circuit breaker level changes, by level left and level entered (closed, shrink, drop-optional, frozen).',
    labelNames: ['from', 'to'],
    registers: [registry],
  });
  // Every possible change exists at 0, so increase() sees the first one: up any number of levels,
  // down one.
  for (const [i, from] of BREAKER_LEVELS.entries()) {
    for (const [j, to] of BREAKER_LEVELS.entries())
      if (j > i || j === i - 1) breakerTransitions.inc({ from, to }, 0);
  }
  const robustUpdates = new Counter<'outcome'>({
    name: 'cohort_robust_updates_total',
    help: 'plain mode with a robust rule: updates the rule kept or left out, and those the norm bound scaled down.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of ['kept', 'dropped', 'norm_clipped']) robustUpdates.inc({ outcome }, 0);
  const culprits = new Counter<'role' | 'fault'>({
    name: 'cohort_culprits_total',
    help: 'Members a round decision named at fault (docs/security.md, "Blame"), by role and fault.',
    labelNames: ['role', 'fault'],
    registers: [registry],
  });
  for (const [role, fault] of [
    ['aggregator', 'PARTIAL_NOT_SUM'],
    ['aggregator', 'CONTRIBUTION_NOT_STORED'],
    ['aggregator', 'UPDATE_DROPPED'],
    ['site', 'ISOLATED'],
  ] as const) {
    culprits.inc({ role, fault }, 0);
  }
  const lastCommit = new Gauge({
    name: 'cohort_last_commit_timestamp_seconds',
    help: 'When this coordinator last published a COMMIT, seconds since the epoch (0: none yet).',
    registers: [registry],
  });
  scrapedGauge(
    registry,
    {
      name: 'cohort_version_drift_sites',
      help: 'YES voters of the latest COMMIT whose switch wait has ended that are live and not switched to it (target 0).',
    },
    () => [[{}, drift.drift(now(), (s) => live().has(s))]],
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_switches_missed_total',
      help: 'YES voters of a COMMIT, live, that had not switched to it when the switch wait ended.',
    },
    () => {
      drift.drift(now(), (s) => live().has(s));
      return [[{}, drift.missedTotal]];
    },
  );

  const onEvent = (event: CoordinatorEvent): void => {
    try {
      observe(event);
    } catch {
      // a metric must never break the coordinator
    }
  };
  const observe = (event: CoordinatorEvent): void => {
    const at = now();
    switch (event.type) {
      case 'round-open': {
        phases.open(event.round, at);
        const load = new Map<string, number>([...aggregators].map((a) => [a, 0]));
        for (const a of event.assignments) load.set(a.aggregator, (load.get(a.aggregator) ?? 0) + 1);
        assigned.reset();
        for (const [aggregator, n] of load) {
          aggregators.add(aggregator);
          assigned.set({ aggregator }, n);
        }
        break;
      }
      case 'partial':
        aggregators.add(event.aggregator);
        partials.inc({ aggregator: event.aggregator });
        partialSites.inc({ aggregator: event.aggregator }, event.sites.length);
        break;
      case 'prepare':
        for (const o of phases.prepare(event.round, at)) observePhase(o);
        break;
      case 'vote':
        votes.inc({ vote: event.yes ? 'yes' : event.abstain ? 'abstain' : 'no' });
        drift.vote(event.round, event.member, event.yes);
        break;
      case 'decision': {
        const s = event.summary;
        for (const o of phases.decided(s.round, s.durationMs, at)) observePhase(o);
        drift.decided(s.round, s.commit, at, (site) => live().has(site));
        if (s.commit) lastCommit.set(at / 1000);
        for (const c of s.culprits) culprits.inc({ role: c.role, fault: c.fault });
        const parameters = options.parameters ?? stats.get().parameters;
        if (s.kind === 'round' && s.uploadBytes > 0 && s.participants > 0 && parameters > 0) {
          sentBytes.inc(s.uploadBytes);
          float32Bytes.inc(s.participants * parameters * 4);
        }
        break;
      }
      case 'breaker':
        breakerTransitions.inc({ from: event.from, to: event.to });
        break;
      case 'robust':
        robustUpdates.inc({ outcome: 'kept' }, event.kept.length);
        robustUpdates.inc({ outcome: 'dropped' }, event.dropped.length);
        robustUpdates.inc({ outcome: 'norm_clipped' }, event.clipped);
        break;
      case 'switched':
        if (drift.switched(event.round, event.member) && Number.isFinite(event.latencyMs))
          syncLatency.observe(Math.max(0, event.latencyMs) / 1000);
        break;
      default:
        break;
    }
  };

  // ---- from stats, at scrape time ----
  scrapedCounter(
    registry,
    {
      name: 'cohort_blocks_rejected_total',
      help: 'Messages refused (blocks, manifests, partials, heartbeats, votes, switches, snapshots, requests) and transport drops, by reason.',
      labelNames: ['reason'],
    },
    () => [...countsByLabel(stats.get().rejectedByReason)].map(([reason, n]) => [{ reason }, n] as const),
    REJECT_REASON_LABELS.map((reason) => ({ reason })),
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_rounds_total',
      help: 'Rounds decided by this coordinator, by outcome.',
      labelNames: ['outcome'],
    },
    () => [
      [{ outcome: 'commit' }, stats.get().committed],
      [{ outcome: 'abort' }, stats.get().aborted],
    ],
    [{ outcome: 'commit' }, { outcome: 'abort' }],
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_heartbeats_expected_total',
      help: 'Heartbeats the live members should have sent, by their stamps and round.heartbeatMs.',
    },
    () => [[{}, stats.get().heartbeatsExpected]],
  );
  scrapedCounter(
    registry,
    {
      name: 'cohort_heartbeats_received_total',
      help: 'Verified heartbeats received (at most the expected count per member).',
    },
    () => [[{}, stats.get().heartbeatsReceived]],
  );
  scrapedCounter(
    registry,
    { name: 'cohort_snapshots_stored_total', help: 'Model snapshots stored by this coordinator.' },
    () => [[{}, stats.get().snapshots]],
  );
  scrapedGauge(
    registry,
    {
      name: 'cohort_coordinator_phase',
      help: 'The coordinator phase: 1 for the current one, 0 for the others.',
      labelNames: ['phase'],
    },
    () => [[{ phase: stats.get().phase }, 1]],
    COORDINATOR_PHASES.map((phase) => ({ phase })),
  );
  scrapedGauge(
    registry,
    { name: 'cohort_coordinator_round', help: 'The round the coordinator runs or opens next.' },
    () => [[{}, stats.get().round]],
  );
  scrapedGauge(
    registry,
    { name: 'cohort_head_height', help: 'Height of the head commit (commits since genesis).' },
    () => [[{}, stats.get().height]],
  );
  scrapedGauge(
    registry,
    { name: 'cohort_log_sequence', help: 'Sequence of the last entry of the federation log.' },
    () => [[{}, stats.get().logSequence]],
  );
  scrapedGauge(
    registry,
    {
      name: 'cohort_live_members',
      help: 'Members heard from within the liveness window.',
      labelNames: ['role'],
    },
    () => [
      [{ role: 'site' }, stats.get().liveSites.length],
      [{ role: 'aggregator' }, stats.get().liveAggregators.length],
    ],
    [{ role: 'site' }, { role: 'aggregator' }],
  );
  scrapedGauge(
    registry,
    {
      name: 'cohort_breaker_level',
      help: 'Circuit breaker level: 0 closed, 1 shrink (failing sites left out), 2 drop optional work, 3 frozen (no training round opens).',
    },
    () => [[{}, stats.get().breaker.level]],
  );
  scrapedGauge(
    registry,
    {
      name: 'cohort_breaker_failing_ratio',
      help: "Failing or late site-rounds over expected ones in the circuit breaker's window (0..1).",
    },
    () => [[{}, stats.get().breaker.share]],
  );
  for (const [name, help, value] of [
    ['spent', 'ε spent as of the head commit', (p: { epsilon: number }) => p.epsilon],
    ['budget', 'the configured ε budget', (p: { budget: number }) => p.budget],
  ] as const) {
    scrapedGauge(
      registry,
      {
        name: `cohort_privacy_epsilon_${name}`,
        help: `Differential privacy: ${help}; absent without privacy.`,
      },
      () => {
        const p = stats.get().privacy;
        return p === undefined ? [] : [[{}, value(p)]];
      },
    );
  }
  scrapedGauge(
    registry,
    { name: 'cohort_excluded_sites', help: 'Sites excluded from rounds (voted NO or missed a vote) now.' },
    () => [[{}, stats.get().excluded.length]],
  );
  const transportFresh =
    options.transportStats === undefined ? () => {} : transportMetrics(registry, options.transportStats);
  const timings = createCryptoTimings(registry);

  return {
    registry,
    onEvent,
    timings,
    contentType: registry.contentType,
    text: () => {
      stats.fresh();
      transportFresh();
      return registry.metrics();
    },
  };
}
