import { describe, expect, it } from 'vitest';
import { type StatusJson, statusLines } from '../../src/cli/commands/status.ts';

const BASE: StatusJson = {
  federation: 'f',
  phase: 'waiting',
  round: 4,
  head: 'ab'.repeat(32),
  height: 3,
  logSequence: 17,
  sites: { configured: 5, live: ['site-1'], excluded: [], revoked: [] },
  aggregators: { configured: 1, live: ['agg-1'] },
  committed: 3,
  aborted: 0,
  rejected: 0,
  snapshots: 0,
  run: null,
  lastRounds: [],
};

describe('cohort status lines', () => {
  it('name the robust rule of a plain-mode federation, and say nothing of aggregation in he mode', () => {
    expect(statusLines({ ...BASE, aggregation: { mode: 'plain', rule: 'multi-krum' } })).toContain(
      'aggregation: plain mode, multi-krum',
    );
    expect(statusLines({ ...BASE, aggregation: { mode: 'plain', rule: null } })).toContain(
      'aggregation: plain mode, FedAvg of the sum',
    );
    for (const aggregation of [{ mode: 'he', rule: null }, null, undefined]) {
      expect(statusLines({ ...BASE, aggregation }).some((l) => l.startsWith('aggregation'))).toBe(false);
    }
  });
});
