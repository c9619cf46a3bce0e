import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createCoordinatorMetrics, REJECT_REASON_LABELS } from '../../src/metrics/index.ts';
import type { CoordinatorStats, RoundSummary } from '../../src/services/coordinator/index.ts';
import { NO_PROMTOOL, PROMTOOL, parseExposition, promtool, sample } from '../helpers/promtool.ts';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function baseStats(): Mutable<CoordinatorStats> {
  return {
    phase: 'collecting',
    round: 3,
    head: 'ab'.repeat(32),
    height: 2,
    logSequence: 9,
    liveSites: ['site-1', 'site-2', 'site-3'],
    liveAggregators: ['agg-1'],
    excluded: ['site-4'],
    committed: 2,
    aborted: 1,
    rejected: 0,
    rejectedByReason: {},
    snapshots: 0,
    parameters: 1_000,
    heartbeatsExpected: 200,
    heartbeatsReceived: 199,
    breaker: {
      enabled: true,
      level: 0,
      name: 'closed',
      share: 0,
      rounds: 0,
      failing: [],
      probing: false,
      changedAtMs: null,
      probeAtMs: null,
      transitions: 0,
    },
  };
}

function summary(over: Partial<RoundSummary>): RoundSummary {
  return {
    round: 3,
    kind: 'round',
    commit: true,
    reason: '',
    contributors: 3,
    participants: 3,
    commitHash: 'cd'.repeat(32),
    height: 3,
    logSequence: 12,
    aggregateBytes: 0,
    uploadBytes: 3_000,
    durationMs: 4_400,
    noVoters: [],
    missing: [],
    evaluation: null,
    culprits: [],
    ...over,
  };
}

describe('createCoordinatorMetrics', () => {
  it('turns events into histograms and counters (hand-computed values)', async () => {
    const stats = baseStats();
    let clock = 1_000;
    const m = createCoordinatorMetrics({
      stats: () => stats,
      aggregators: ['agg-1', 'agg-2'],
      switchWaitMs: 2_000,
      now: () => clock,
    });
    const assignments = ['site-1', 'site-2', 'site-3'].map((site) => ({
      site,
      aggregator: 'agg-1',
      examples: 10,
    }));
    m.onEvent({ type: 'round-open', round: 3, assignments, clip: 1, totalExamples: 30, deadlineUnixMs: 0 });
    clock = 4_500;
    m.onEvent({ type: 'partial', round: 3, aggregator: 'agg-1', sites: ['site-1', 'site-2', 'site-3'] });
    m.onEvent({ type: 'prepare', round: 3, contributors: 3, aggregateDigest: '00', bytes: 10 });
    for (const member of ['site-1', 'site-2', 'site-3'])
      m.onEvent({ type: 'vote', round: 3, member, yes: member !== 'site-3', abstain: false, reason: '' });
    m.onEvent({
      type: 'vote',
      round: 3,
      member: 'site-4',
      yes: false,
      abstain: true,
      reason: 'LOG_UNAVAILABLE',
    });
    clock = 5_250;
    m.onEvent({ type: 'decision', summary: summary({}) });
    m.onEvent({ type: 'switched', round: 3, member: 'site-1', latencyMs: 40, testAccuracy: undefined });
    m.onEvent({ type: 'switched', round: 3, member: 'site-1', latencyMs: 40, testAccuracy: 0.9 }); // a repeat
    m.onEvent({ type: 'switched', round: 3, member: 'site-2', latencyMs: 200, testAccuracy: undefined });

    let s = parseExposition(await m.text());
    expect(sample(s, 'cohort_round_phase_duration_seconds_count', { phase: 'collect' })).toBe(1);
    expect(sample(s, 'cohort_round_phase_duration_seconds_sum', { phase: 'collect' })).toBe(3.5);
    expect(sample(s, 'cohort_round_phase_duration_seconds_sum', { phase: 'vote' })).toBe(0.75);
    expect(sample(s, 'cohort_round_duration_seconds_sum')).toBe(4.4);
    // one observation per site and commit; 0.2 s lands in the le="0.2" bucket
    expect(sample(s, 'cohort_sync_latency_seconds_count')).toBe(2);
    expect(sample(s, 'cohort_sync_latency_seconds_sum')).toBeCloseTo(0.24, 12);
    expect(sample(s, 'cohort_sync_latency_seconds_bucket', { le: '0.15' })).toBe(1);
    expect(sample(s, 'cohort_sync_latency_seconds_bucket', { le: '0.2' })).toBe(2);
    // compression: 3 participants × 1000 parameters × 4 bytes against 3000 bytes sent
    expect(sample(s, 'cohort_update_float32_bytes_total')).toBe(12_000);
    expect(sample(s, 'cohort_update_sent_bytes_total')).toBe(3_000);
    expect(sample(s, 'cohort_votes_total', { vote: 'yes' })).toBe(2);
    expect(sample(s, 'cohort_votes_total', { vote: 'no' })).toBe(1);
    expect(sample(s, 'cohort_votes_total', { vote: 'abstain' })).toBe(1);
    expect(sample(s, 'cohort_aggregator_partials_total', { aggregator: 'agg-1' })).toBe(1);
    expect(sample(s, 'cohort_aggregator_partials_total', { aggregator: 'agg-2' })).toBe(0);
    expect(sample(s, 'cohort_aggregator_partial_sites_total', { aggregator: 'agg-1' })).toBe(3);
    expect(sample(s, 'cohort_aggregator_assigned_sites', { aggregator: 'agg-1' })).toBe(3);
    expect(sample(s, 'cohort_aggregator_assigned_sites', { aggregator: 'agg-2' })).toBe(0);
    expect(sample(s, 'cohort_last_commit_timestamp_seconds')).toBe(5.25);
    // the switch wait has not ended: no drift yet
    expect(sample(s, 'cohort_version_drift_sites')).toBe(0);
    clock = 7_250;
    s = parseExposition(await m.text());
    // every YES voter (site-1, site-2) switched; site-3 voted NO
    expect(sample(s, 'cohort_version_drift_sites')).toBe(0);
    expect(sample(s, 'cohort_switches_missed_total')).toBe(0);
  });

  it('shows the circuit breaker: its level and share at scrape time, its changes by from and to', async () => {
    const stats = baseStats();
    const m = createCoordinatorMetrics({ stats: () => stats });
    let s = parseExposition(await m.text());
    expect(sample(s, 'cohort_breaker_level')).toBe(0);
    expect(sample(s, 'cohort_breaker_failing_ratio')).toBe(0);
    // 9 possible changes (up any number of levels, down one), all at 0.
    expect(s.filter((x) => x.name === 'cohort_breaker_transitions_total').length).toBe(9);
    expect(sample(s, 'cohort_breaker_transitions_total', { from: 'closed', to: 'frozen' })).toBe(0);
    const event = { type: 'breaker', reason: 'r', round: 4 } as const;
    m.onEvent({ ...event, from: 'closed', to: 'shrink', share: 0.25 });
    m.onEvent({ ...event, from: 'shrink', to: 'frozen', share: 0.75 });
    m.onEvent({ ...event, from: 'frozen', to: 'drop-optional', share: 0 });
    stats.breaker = { ...stats.breaker, level: 2, name: 'drop-optional', share: 0.125 };
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_breaker_level')).toBe(2);
    expect(sample(s, 'cohort_breaker_failing_ratio')).toBe(0.125);
    expect(sample(s, 'cohort_breaker_transitions_total', { from: 'closed', to: 'shrink' })).toBe(1);
    expect(sample(s, 'cohort_breaker_transitions_total', { from: 'shrink', to: 'frozen' })).toBe(1);
    expect(sample(s, 'cohort_breaker_transitions_total', { from: 'frozen', to: 'drop-optional' })).toBe(1);
    expect(sample(s, 'cohort_breaker_transitions_total', { from: 'shrink', to: 'closed' })).toBe(0);
  });

  it('counts the updates a robust rule kept, left out and scaled to its norm bound', async () => {
    const m = createCoordinatorMetrics({ stats: () => baseStats() });
    let s = parseExposition(await m.text());
    for (const outcome of ['kept', 'dropped', 'norm_clipped'])
      expect(sample(s, 'cohort_robust_updates_total', { outcome })).toBe(0);
    const event = { type: 'robust', rule: 'multi-krum', clipped: 1 } as const;
    m.onEvent({ ...event, round: 1, kept: ['site-1', 'site-2', 'site-3', 'site-4'], dropped: ['site-5'] });
    m.onEvent({ ...event, round: 2, kept: ['site-1', 'site-2', 'site-4', 'site-5'], dropped: ['site-3'] });
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_robust_updates_total', { outcome: 'kept' })).toBe(8);
    expect(sample(s, 'cohort_robust_updates_total', { outcome: 'dropped' })).toBe(2);
    expect(sample(s, 'cohort_robust_updates_total', { outcome: 'norm_clipped' })).toBe(2);
  });

  it('counts the culprits decisions name, by role and fault', async () => {
    const m = createCoordinatorMetrics({ stats: () => baseStats() });
    let s = parseExposition(await m.text());
    expect(sample(s, 'cohort_culprits_total', { role: 'aggregator', fault: 'PARTIAL_NOT_SUM' })).toBe(0);
    const culprit = (member: string, role: 'aggregator' | 'site', fault: string) => ({
      member,
      role,
      fault,
      detail: '',
      evidence: '',
    });
    m.onEvent({
      type: 'decision',
      summary: summary({ commit: false, culprits: [culprit('agg-1', 'aggregator', 'PARTIAL_NOT_SUM')] }),
    });
    m.onEvent({
      type: 'decision',
      summary: summary({ round: 4, commit: false, culprits: [culprit('site-5', 'site', 'ISOLATED')] }),
    });
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_culprits_total', { role: 'aggregator', fault: 'PARTIAL_NOT_SUM' })).toBe(1);
    expect(sample(s, 'cohort_culprits_total', { role: 'site', fault: 'ISOLATED' })).toBe(1);
    expect(sample(s, 'cohort_culprits_total', { role: 'aggregator', fault: 'UPDATE_DROPPED' })).toBe(0);
  });

  it('counts drift when a live YES voter does not switch', async () => {
    const stats = baseStats();
    let clock = 0;
    const m = createCoordinatorMetrics({ stats: () => stats, now: () => clock });
    m.onEvent({ type: 'vote', round: 4, member: 'site-1', yes: true, abstain: false, reason: '' });
    m.onEvent({ type: 'vote', round: 4, member: 'site-2', yes: true, abstain: false, reason: '' });
    m.onEvent({ type: 'decision', summary: summary({ round: 4 }) });
    clock = 2_000;
    const s = parseExposition(await m.text());
    expect(sample(s, 'cohort_version_drift_sites')).toBe(2);
    expect(sample(s, 'cohort_switches_missed_total')).toBe(2);
  });

  it('reads the stats at scrape time, adding deltas to the counters', async () => {
    const stats = baseStats();
    stats.rejectedByReason = { BLOCK_BAD_SIGNATURE: 2, TRANSPORT_RATE_LIMITED: 4, 'made up': 1 };
    const m = createCoordinatorMetrics({ stats: () => stats });
    let s = parseExposition(await m.text());
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'BAD_SIGNATURE' })).toBe(2);
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'TRANSPORT_RATE_LIMITED' })).toBe(4);
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'OTHER' })).toBe(1);
    for (const reason of REJECT_REASON_LABELS)
      expect(sample(s, 'cohort_blocks_rejected_total', { reason })).toBeGreaterThanOrEqual(0);
    expect(s.filter((x) => x.name === 'cohort_blocks_rejected_total')).toHaveLength(
      REJECT_REASON_LABELS.length,
    );
    expect(sample(s, 'cohort_rounds_total', { outcome: 'commit' })).toBe(2);
    expect(sample(s, 'cohort_rounds_total', { outcome: 'abort' })).toBe(1);
    expect(sample(s, 'cohort_heartbeats_expected_total')).toBe(200);
    expect(sample(s, 'cohort_heartbeats_received_total')).toBe(199);
    expect(sample(s, 'cohort_coordinator_phase', { phase: 'collecting' })).toBe(1);
    expect(sample(s, 'cohort_coordinator_phase', { phase: 'voting' })).toBe(0);
    expect(sample(s, 'cohort_live_members', { role: 'site' })).toBe(3);
    expect(sample(s, 'cohort_live_members', { role: 'aggregator' })).toBe(1);
    expect(sample(s, 'cohort_excluded_sites')).toBe(1);
    expect(sample(s, 'cohort_head_height')).toBe(2);

    stats.rejectedByReason = { BLOCK_BAD_SIGNATURE: 5, TRANSPORT_RATE_LIMITED: 4, 'made up': 1 };
    stats.committed = 3;
    stats.heartbeatsExpected = 300;
    stats.heartbeatsReceived = 298;
    stats.phase = 'voting';
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'BAD_SIGNATURE' })).toBe(5);
    expect(sample(s, 'cohort_rounds_total', { outcome: 'commit' })).toBe(3);
    expect(sample(s, 'cohort_heartbeats_expected_total')).toBe(300);
    expect(sample(s, 'cohort_heartbeats_received_total')).toBe(298);
    expect(sample(s, 'cohort_coordinator_phase', { phase: 'collecting' })).toBe(0);
    expect(sample(s, 'cohort_coordinator_phase', { phase: 'voting' })).toBe(1);

    // a source that restarted counts again from 0 instead of going down
    stats.committed = 1;
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_rounds_total', { outcome: 'commit' })).toBe(4);
  });

  it('exports the transport counters when given', async () => {
    const dropped = { RATE_LIMITED: 3, OVERSIZE: 1 } as Record<string, number>;
    const m = createCoordinatorMetrics({
      stats: baseStats,
      transportStats: () => ({ retries: 2, permissionErrors: 1, dropped }),
    });
    const s = parseExposition(await m.text());
    expect(sample(s, 'cohort_transport_dropped_total', { reason: 'RATE_LIMITED' })).toBe(3);
    expect(sample(s, 'cohort_transport_dropped_total', { reason: 'UNSOLICITED' })).toBe(0);
    expect(sample(s, 'cohort_transport_retries_total')).toBe(2);
    expect(sample(s, 'cohort_transport_permission_errors_total')).toBe(1);
  });

  it('records crypto timings in seconds', async () => {
    const m = createCoordinatorMetrics({ stats: baseStats });
    m.timings.signature('partial', 3);
    m.timings.ckks('add', 0.2);
    const s = parseExposition(await m.text());
    expect(sample(s, 'cohort_signature_verify_seconds_sum', { kind: 'partial' })).toBe(0.003);
    expect(sample(s, 'cohort_signature_verify_seconds_count', { kind: 'control' })).toBe(0);
    expect(sample(s, 'cohort_ckks_operation_seconds_sum', { operation: 'add' })).toBe(0.0002);
  });

  it('keeps to its own registry: two coordinators in one process, and a registry passed in', async () => {
    const a = createCoordinatorMetrics({ stats: baseStats });
    const b = createCoordinatorMetrics({ stats: baseStats });
    expect(a.registry).not.toBe(b.registry);
    const registry = new Registry();
    const c = createCoordinatorMetrics({ stats: baseStats, registry });
    expect(c.registry).toBe(registry);
    expect(await registry.metrics()).toContain('cohort_sync_latency_seconds_bucket');
    expect(c.contentType).toMatch(/^text\/plain/);
  });

  it('never lets a listener failure reach the coordinator', () => {
    const m = createCoordinatorMetrics({
      stats: () => {
        throw new Error('stats down');
      },
    });
    expect(() => m.onEvent({ type: 'decision', summary: summary({}) })).not.toThrow();
  });

  it('refuses bad options, naming them', () => {
    expect(() => createCoordinatorMetrics({} as never)).toThrow(/options\.stats/);
    expect(() => createCoordinatorMetrics({ stats: baseStats, parameters: 0 })).toThrow(
      /options\.parameters/,
    );
    expect(() => createCoordinatorMetrics({ stats: baseStats, switchWaitMs: -1 })).toThrow(/switchWaitMs/);
  });

  it.skipIf(PROMTOOL === undefined)(
    `passes promtool check metrics${PROMTOOL ? '' : ` (skipped: ${NO_PROMTOOL})`}`,
    async () => {
      const m = createCoordinatorMetrics({
        stats: baseStats,
        transportStats: () => ({ retries: 0, permissionErrors: 0, dropped: {} }),
      });
      m.onEvent({ type: 'decision', summary: summary({}) });
      const r = promtool(['check', 'metrics'], await m.text());
      expect(r.output).toBe('');
      expect(r.code).toBe(0);
    },
  );
});
