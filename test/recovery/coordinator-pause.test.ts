// A coordinator paused past its lease while a standby waits (real processes over a real
// nats-server with JetStream). Coordinator A stops itself with SIGSTOP at the worst moment: its
// lease just checked, the RoundOpen of round 3 not yet published (failpoint
// `log.round-open-checked@3:stop`). Its lease lapses; standby B takes the lease, and A is resumed
// with SIGCONT, publishing the append it had prepared:
//   - B claimed the log when it took over (a `coordinator.start` record), so A's late append finds
//     the log moved on and is refused: A stops cleanly, exit code 2 with a named error, no stack;
//   - B goes on and commits every round it was asked for; the log is one chain, and no entry lies
//     between B's start record and its own rounds but B's.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ACTION_COORDINATOR_START } from '../../src/services/federation-log/index.ts';
import { expectSingleChain } from '../helpers/federation.ts';
import { Federation, recoveryOverrides, waitExit, waitFor, waitLine } from './recovery-helpers.ts';

const SITES = ['site-1', 'site-2', 'site-3'];

/** The state letter of process `pid` in /proc (T: stopped). */
const procState = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[0];

describe('a coordinator paused past its lease, a standby taking over (SIGSTOP, real processes)', () => {
  let f: Federation;

  beforeAll(async () => {
    f = await Federation.create('rpause', { aggregators: 1, sites: 3, overrides: recoveryOverrides(4) });
    f.spawn('aggregator', 'agg-1');
    for (const s of SITES) f.spawn('agent', s);
  });
  afterAll(async () => {
    await f?.stop();
  });

  it("the paused coordinator's late append is refused and it stops cleanly; the standby commits on one chain", async () => {
    const a = f.spawn('coordinator', 'coordinator', ['--rounds', '5'], {
      COHORT_FAILPOINT: 'log.round-open-checked@3:stop',
    });
    await waitLine(f, a, /^round 2: .*COMMIT/);
    await waitFor('A paused before publishing round 3', () => procState(a.child.pid!) === 'T', 60_000);
    expect(a.output).toContain('"failpoint":"log.round-open-checked","round":3');

    // B waits for A's lease to lapse (1.5 s), takes it, and claims the log.
    const b = f.spawn('coordinator', 'coordinator', ['--rounds', '5']);
    await waitLine(f, b, /^coordinator coordinator: federation rpause, .*next round 3/);
    await waitFor(
      "B's start record in the log",
      async () =>
        (await f.logEntries()).filter((e) => e.record.adminAction?.action === ADMIN_ACTION_COORDINATOR_START)
          .length === 2,
      30_000,
    );

    a.child.kill('SIGCONT');
    const aEnd = await waitExit(a);
    expect(aEnd.code, a.output).toBe(2);
    expect(a.output).toMatch(/error \[(LOG_SEQUENCE_CONFLICT|LEASE_LOST)\]/);
    expect(a.output).not.toMatch(/^\s+at /m);

    await waitLine(f, b, /^round 5: .*COMMIT/, 90_000);
    const bEnd = await waitExit(b);
    expect(bEnd.code, b.output).toBe(0);
    const decisions = await f.decisions();
    expect(decisions.map((d) => [d.round, d.commit])).toEqual([
      [1, true],
      [2, true],
      [3, true],
      [4, true],
      [5, true],
    ]);
    expectSingleChain(decisions, f.genesis);
    // A's RoundOpen of round 3 never entered the log: the round 3 opened is B's, after B's claim.
    const entries = await f.logEntries();
    const starts = entries.filter((e) => e.record.adminAction?.action === ADMIN_ACTION_COORDINATOR_START);
    const opens3 = entries.filter((e) => e.record.roundOpen?.round === 3);
    expect(opens3).toHaveLength(1);
    expect(opens3[0]!.sequence).toBeGreaterThan(starts[1]!.sequence);
  }, 180_000);
});
