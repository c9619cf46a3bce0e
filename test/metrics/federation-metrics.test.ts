// The metrics of a real small federation (two aggregators, two sites, real nats-server): the
// coordinator's events and stats feed createCoordinatorMetrics, `promtool check metrics` accepts
// the exposition, the four target metrics carry what the run did, the members' cryptography
// reports its timings, and every metric the shipped rules name is in it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { CohortConfigInput } from '../../src/config/index.ts';
import {
  type CoordinatorMetrics,
  createAggregatorMetrics,
  createCoordinatorMetrics,
  createSiteMetrics,
  type MemberMetrics,
} from '../../src/metrics/index.ts';
import { type AgentService, startAgent } from '../../src/services/agent/index.ts';
import { type AggregatorService, startAggregator } from '../../src/services/aggregator/index.ts';
import type { CoordinatorEvent, CoordinatorSummary } from '../../src/services/coordinator/index.ts';
import { Federation } from '../helpers/federation.ts';
import {
  families,
  NO_PROMTOOL,
  PROMTOOL,
  parseExposition,
  promtool,
  type Sample,
  sample,
} from '../helpers/promtool.ts';

const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 15_000,
    voteTimeoutMs: 15_000,
    minContributors: 2,
  },
  learning: { model: 'logreg', trainLimit: 400, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};
const SWITCH_WAIT_MS = 5_000;
const RULES = join(import.meta.dirname, '..', '..', 'deploy', 'prometheus', 'cohort.rules.yaml');

describe('metrics of a live federation', () => {
  let f: Federation;
  let metrics: CoordinatorMetrics;
  let members: { id: string; role: 'aggregator' | 'site'; metrics: MemberMetrics }[];
  const services: (AgentService | AggregatorService)[] = [];
  let summary: CoordinatorSummary;
  const events: CoordinatorEvent[] = [];
  let text: string;
  let samples: Sample[];
  let elapsedMs: number;

  beforeAll(async () => {
    // Two aggregators: the ring gives each one of the two sites, so the coordinator adds partials.
    f = await Federation.create('metrics', { aggregators: 2, sites: 2, overrides: OVERRIDES });
    const started = Date.now();
    members = [];
    for (const a of f.dep.aggregators) {
      let service: AggregatorService | undefined;
      const m = createAggregatorMetrics({ stats: () => service!.stats() });
      service = await startAggregator(await f.member(a), { cryptoTimings: m.timings });
      services.push(service);
      members.push({ id: a, role: 'aggregator', metrics: m });
    }
    for (const s of f.dep.sites) {
      let agent: AgentService | undefined;
      const m = createSiteMetrics({ stats: () => agent!.stats() });
      agent = await startAgent(await f.member(s), { cryptoTimings: m.timings });
      services.push(agent);
      members.push({ id: s, role: 'site', metrics: m });
    }
    let handle: ReturnType<Federation['startCoordinator']> | undefined;
    metrics = createCoordinatorMetrics({
      stats: () => handle!.stats(),
      transportStats: () => f.coord.transport.stats(),
      aggregators: f.dep.aggregators,
      switchWaitMs: SWITCH_WAIT_MS,
    });
    handle = f.startCoordinator({
      rounds: 2,
      switchWaitMs: SWITCH_WAIT_MS,
      cryptoTimings: metrics.timings,
      onEvent: (e) => {
        events.push(e);
        metrics.onEvent(e);
      },
    });
    summary = await handle.done;
    text = await metrics.text();
    elapsedMs = Date.now() - started;
    samples = parseExposition(text);
  });

  afterAll(async () => {
    for (const service of services.reverse()) await service.stop();
    await f?.stop();
  });

  it('commits both rounds', () => {
    expect(summary.rounds.map((r) => [r.round, r.commit, r.reason])).toEqual([
      [1, true, ''],
      [2, true, ''],
    ]);
  });

  it.skipIf(PROMTOOL === undefined)(
    `passes promtool check metrics, coordinator and members${PROMTOOL ? '' : ` (skipped: ${NO_PROMTOOL})`}`,
    async () => {
      const r = promtool(['check', 'metrics'], text);
      expect(r.output).toBe('');
      expect(r.code).toBe(0);
      for (const m of members) {
        const mr = promtool(['check', 'metrics'], await m.metrics.text());
        expect({ id: m.id, output: mr.output, code: mr.code }).toEqual({ id: m.id, output: '', code: 0 });
      }
    },
  );

  it('observes one sync latency per switch, under the 0.2 s bucket for most of them', () => {
    const switches = summary.switchLatency.count;
    expect(switches).toBe(4); // two sites, two commits
    expect(sample(samples, 'cohort_sync_latency_seconds_count')).toBe(switches);
    expect(sample(samples, 'cohort_sync_latency_seconds_bucket', { le: '+Inf' })).toBe(switches);
    const firstReports = new Set(
      events.filter((e) => e.type === 'switched').map((e) => `${e.round}/${e.member}`),
    );
    expect(firstReports.size).toBe(switches);
    const sum = sample(samples, 'cohort_sync_latency_seconds_sum');
    expect(sum).toBeGreaterThanOrEqual(0);
    expect(sum).toBeLessThan(switches * 5);
  });

  it('counts heartbeats expected and received, expected bounded by the time the members ran', () => {
    const expected = sample(samples, 'cohort_heartbeats_expected_total');
    const received = sample(samples, 'cohort_heartbeats_received_total');
    expect(received).toBeGreaterThanOrEqual(4 * 2); // four members, at least two heartbeats each
    expect(received).toBeLessThanOrEqual(expected);
    // Members in one process share its event loop: a heartbeat sent late counts as lost, so the
    // loss is not asserted; what is expected can never exceed one per interval the members ran.
    const heartbeatMs = OVERRIDES.round!.heartbeatMs!;
    expect(expected).toBeLessThanOrEqual(4 * (2 + Math.ceil(elapsedMs / heartbeatMs)));
  });

  it('counts the compression counters from the decided rounds', () => {
    const parameters = 784 * 10 + 10;
    const rounds = summary.rounds.filter((r) => r.kind === 'round' && r.uploadBytes > 0);
    expect(rounds.length).toBe(2);
    const sent = rounds.reduce((a, r) => a + r.uploadBytes, 0);
    const float32 = rounds.reduce((a, r) => a + r.participants * parameters * 4, 0);
    expect(sample(samples, 'cohort_update_sent_bytes_total')).toBe(sent);
    expect(sample(samples, 'cohort_update_float32_bytes_total')).toBe(float32);
    expect(sent).toBeGreaterThan(0);
  });

  it('reports no version drift: every YES voter switched', () => {
    expect(sample(samples, 'cohort_version_drift_sites')).toBe(0);
    expect(sample(samples, 'cohort_switches_missed_total')).toBe(0);
  });

  it('carries the rest of what the run did', () => {
    expect(sample(samples, 'cohort_rounds_total', { outcome: 'commit' })).toBe(2);
    expect(sample(samples, 'cohort_rounds_total', { outcome: 'abort' })).toBe(0);
    expect(sample(samples, 'cohort_round_duration_seconds_count')).toBe(2);
    expect(sample(samples, 'cohort_round_phase_duration_seconds_count', { phase: 'collect' })).toBe(2);
    expect(sample(samples, 'cohort_round_phase_duration_seconds_count', { phase: 'vote' })).toBe(2);
    expect(sample(samples, 'cohort_round_phase_duration_seconds_sum', { phase: 'collect' })).toBeGreaterThan(
      0,
    );
    for (const agg of f.dep.aggregators) {
      const partials = events.filter((e) => e.type === 'partial' && e.aggregator === agg);
      expect(partials.length, agg).toBe(2);
      expect(sample(samples, 'cohort_aggregator_partials_total', { aggregator: agg })).toBe(2);
      expect(sample(samples, 'cohort_aggregator_partial_sites_total', { aggregator: agg })).toBe(2);
    }
    expect(sample(samples, 'cohort_head_height')).toBe(2);
    expect(sample(samples, 'cohort_coordinator_phase', { phase: 'done' })).toBe(1);
    const decided = events.filter((e) => e.type === 'decision').length;
    expect(decided).toBe(2);
    expect(sample(samples, 'cohort_last_commit_timestamp_seconds')).toBeGreaterThan(0);
    expect(sample(samples, 'cohort_votes_total', { vote: 'yes' })).toBe(4);
    expect(sample(samples, 'cohort_transport_dropped_total', { reason: 'OVERSIZE' })).toBe(0);
  });

  it('times the coordinator’s signature verifications and CKKS additions', () => {
    const count = (labels: Record<string, string>, name: string) => sample(samples, name, labels);
    const signatures = 'cohort_signature_verify_seconds_count';
    // One lattice verification per partial (its blocks share the manifest's signature) at least.
    expect(count({ kind: 'partial' }, signatures)).toBeGreaterThanOrEqual(4);
    // Each partial forwards its site's signed manifest: two sites, two rounds.
    expect(count({ kind: 'site-update' }, signatures)).toBeGreaterThanOrEqual(4);
    // Heartbeats, four votes and four switches.
    expect(count({ kind: 'control' }, signatures)).toBeGreaterThan(8);
    const ckks = 'cohort_ckks_operation_seconds_count';
    const load = count({ operation: 'load' }, ckks);
    const add = count({ operation: 'add' }, ckks);
    // Two partials a round: every block of both is loaded, the second one's are added to the first's.
    expect(add).toBeGreaterThan(0);
    expect(load).toBe(2 * add);
    expect(count({ operation: 'encrypt' }, ckks)).toBe(0);
    expect(count({ operation: 'decrypt' }, ckks)).toBe(0);
    expect(sample(samples, 'cohort_ckks_operation_seconds_sum', { operation: 'add' })).toBeGreaterThan(0);
  });

  it('times the members’ cryptography: sites encrypt and decrypt, aggregators verify and load', async () => {
    for (const m of members) {
      const s = parseExposition(await m.metrics.text());
      const ckks = (operation: string) => sample(s, 'cohort_ckks_operation_seconds_count', { operation });
      const signatures = (kind: string) => sample(s, 'cohort_signature_verify_seconds_count', { kind });
      if (m.role === 'site') {
        expect({ id: m.id, encrypt: ckks('encrypt') > 0, decrypt: ckks('decrypt') > 0 }).toEqual({
          id: m.id,
          encrypt: true,
          decrypt: true,
        });
        // Both rounds' updates, and the aggregates of both rounds, have as many blocks.
        expect(ckks('decrypt')).toBe(ckks('encrypt'));
      } else {
        // Its site's update each round: one verification, every block loaded; RoundOpens verified.
        expect({ id: m.id, updates: signatures('site-update'), control: signatures('control') }).toEqual({
          id: m.id,
          updates: 2,
          control: 2,
        });
        expect(ckks('load')).toBeGreaterThan(0);
        expect(ckks('add')).toBe(0); // one site each: nothing to add to
      }
    }
  });

  it('exports every metric the shipped rules name', () => {
    const rules = parse(readFileSync(RULES, 'utf8')) as { groups: { rules: { expr: string }[] }[] };
    const named = new Set<string>();
    for (const g of rules.groups)
      for (const r of g.rules)
        for (const m of r.expr.matchAll(/(?<![\w:])cohort_[a-z0-9_]+(?![\w:])/g)) named.add(m[0]);
    expect(named.size).toBeGreaterThan(5);
    const exported = families(text);
    for (const name of named) {
      const family = name.replace(/_(bucket|count|sum)$/, '');
      expect(exported.has(name) || exported.get(family) === 'histogram', name).toBe(true);
    }
  });
});
