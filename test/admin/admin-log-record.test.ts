// The AdminAction record in the log's history rules: accepted anywhere (even while a round is
// open), kept in order, and refused without an action or a caller.
import { describe, expect, it } from 'vitest';
import { FederationTimeline } from '../../src/history/index.ts';
import type { AdminActionBody } from '../../src/protocol/index.ts';
import { FederationLogError } from '../../src/services/federation-log/index.ts';
import { unsignedEntries, versionsScenario } from '../helpers/versions-history.ts';
import { FED, GENESIS } from './admin-fixture.ts';

const action = (over: Partial<AdminActionBody> = {}): AdminActionBody => ({
  action: 'rounds.abort',
  caller: 'ops',
  scope: 'operator',
  target: '6',
  arguments: new TextEncoder().encode('{"round":6}'),
  unixMs: 1_700_000_000_000,
  ...over,
});

describe('AdminAction records in the history', () => {
  it('are folded in order, between a RoundOpen and its decision too', () => {
    const script = versionsScenario(FED, GENESIS);
    const records = [...script.records];
    records.splice(1, 0, { adminAction: action({ action: 'runs.start', target: '' }) }); // round 1 is open here
    records.push({ adminAction: action() });
    const timeline = new FederationTimeline(GENESIS.commit);
    for (const e of unsignedEntries(FED, records)) timeline.apply(e);
    expect(timeline.adminActions.map((a) => [a.entry.sequence, a.action.action, a.action.caller])).toEqual([
      [2, 'runs.start', 'ops'],
      [records.length, 'rounds.abort', 'ops'],
    ]);
    // The chain is the scenario's: the actions changed no history state.
    expect(timeline.head.commit.hash).toEqual(script.head.hash);
    expect(timeline.rounds.length).toBe(5);
  });

  it.each([
    ['no action', { action: '' }],
    ['no caller', { caller: '' }],
  ])('refuses an action with %s', (_name, over) => {
    const timeline = new FederationTimeline(GENESIS.commit);
    const [entry] = unsignedEntries(FED, [{ adminAction: action(over) }]);
    let err: unknown;
    try {
      timeline.apply(entry!);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FederationLogError);
    expect((err as FederationLogError).code).toBe('LOG_HISTORY_INVALID');
    expect(timeline.adminActions).toEqual([]);
  });
});
