import { describe, expect, it } from 'vitest';
import { createAggregatorMetrics, createSiteMetrics } from '../../src/metrics/index.ts';
import type { AgentStats } from '../../src/services/agent/index.ts';
import type { AggregatorStats } from '../../src/services/aggregator/index.ts';
import { NO_PROMTOOL, PROMTOOL, parseExposition, promtool, sample } from '../helpers/promtool.ts';

const aggregatorStats = (over: Partial<AggregatorStats> = {}): AggregatorStats =>
  ({
    member: 'agg-1',
    state: 'IDLE',
    round: 4,
    roundsOpened: 4,
    roundOpensRefused: 1,
    blocksAccepted: 30,
    manifestsAccepted: 6,
    updatesAdded: 6,
    rejected: 5,
    rejections: { BAD_SIGNATURE: 2 },
    transportDrops: { RATE_LIMITED: 3, DUPLICATE: 0 },
    partialsSent: 3,
    partialsFailed: 1,
    contributionsStored: 6,
    contributionsFailed: 0,
    emptyRounds: 0,
    heartbeatsSent: 40,
    lastPartial: null,
    ...over,
  }) as AggregatorStats;

describe('member metrics', () => {
  it('reads an aggregator’s stats: refusals and transport drops under one reason label set', async () => {
    let stats = aggregatorStats();
    const m = createAggregatorMetrics({ stats: () => stats });
    let s = parseExposition(await m.text());
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'BAD_SIGNATURE' })).toBe(2);
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'TRANSPORT_RATE_LIMITED' })).toBe(3);
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'CRC_MISMATCH' })).toBe(0);
    expect(sample(s, 'cohort_aggregator_partials_sent_total', { outcome: 'sent' })).toBe(3);
    expect(sample(s, 'cohort_aggregator_partials_sent_total', { outcome: 'failed' })).toBe(1);
    expect(sample(s, 'cohort_heartbeats_sent_total')).toBe(40);
    stats = aggregatorStats({ rejections: { BAD_SIGNATURE: 4 }, heartbeatsSent: 45 });
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_blocks_rejected_total', { reason: 'BAD_SIGNATURE' })).toBe(4);
    expect(sample(s, 'cohort_heartbeats_sent_total')).toBe(45);
  });

  it('counts the contributions kept in the updates store, stored and failed', async () => {
    let stats = aggregatorStats();
    const m = createAggregatorMetrics({ stats: () => stats });
    let s = parseExposition(await m.text());
    expect(sample(s, 'cohort_aggregator_contributions_total', { outcome: 'stored' })).toBe(6);
    expect(sample(s, 'cohort_aggregator_contributions_total', { outcome: 'failed' })).toBe(0);
    stats = aggregatorStats({ contributionsStored: 9, contributionsFailed: 2 });
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_aggregator_contributions_total', { outcome: 'stored' })).toBe(9);
    expect(sample(s, 'cohort_aggregator_contributions_total', { outcome: 'failed' })).toBe(2);
    // A restarted aggregator counts afresh; the exported counter only grows.
    stats = aggregatorStats({ contributionsStored: 1, contributionsFailed: 0 });
    s = parseExposition(await m.text());
    expect(sample(s, 'cohort_aggregator_contributions_total', { outcome: 'stored' })).toBe(10);
    expect(sample(s, 'cohort_aggregator_contributions_total', { outcome: 'failed' })).toBe(2);
  });

  it('reads a site’s stats', async () => {
    const stats = {
      roundsTrained: 5,
      roundsSkipped: 1,
      blocksSent: 15,
      votesYes: 4,
      votesNo: 1,
      commits: 4,
      aborts: 1,
      replayed: 2,
    } as AgentStats;
    const m = createSiteMetrics({ stats: () => stats });
    const s = parseExposition(await m.text());
    expect(sample(s, 'cohort_site_rounds_trained_total')).toBe(5);
    expect(sample(s, 'cohort_site_votes_total', { vote: 'no' })).toBe(1);
    expect(sample(s, 'cohort_site_decisions_total', { outcome: 'commit' })).toBe(4);
    expect(sample(s, 'cohort_site_commits_replayed_total')).toBe(2);
  });

  it.skipIf(PROMTOOL === undefined)(
    `passes promtool check metrics${PROMTOOL ? '' : ` (skipped: ${NO_PROMTOOL})`}`,
    async () => {
      const m = createAggregatorMetrics({
        stats: () => aggregatorStats(),
        transportStats: () => ({ retries: 1, permissionErrors: 0, dropped: {} }),
      });
      const r = promtool(['check', 'metrics'], await m.text());
      expect(r).toEqual({ code: 0, output: '' });
    },
  );

  it('refuses missing stats, naming the option', () => {
    expect(() => createSiteMetrics({} as never)).toThrow(/options\.stats/);
  });
});
