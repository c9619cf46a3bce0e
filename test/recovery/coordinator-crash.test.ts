// Crash recovery of the coordinator and of a prepared agent, with real processes killed by
// SIGKILL at exact protocol steps (src/services/failpoint.ts) over a real nats-server with
// JetStream. One federation lives through all cases in order, so the log keeps growing and every
// case also checks that nothing before it was lost or decided twice:
//   a + i. coordinator killed after PREPARE, before the append: the restart aborts the round at
//          once (no deadline wait), and the sites' residuals come through the abort untouched;
//   b.     coordinator killed after the append, before announcing, on the last round: the agents
//          reach the logged head with no further round (by the decision timeout, then the
//          restarted coordinator re-announces and runs nothing);
//   g.     a second coordinator started while the first is alive cannot take the lease;
//   c.     an agent killed while PREPARED comes back and commits from the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectSingleChain } from '../helpers/federation.ts';
import {
  Federation,
  hex,
  type MemberProcess,
  recoveryOverrides,
  residualFiles,
  waitAllAt,
  waitExit,
  waitFor,
  waitLine,
} from './recovery-helpers.ts';

const SITES = ['site-1', 'site-2', 'site-3'];

describe('coordinator and prepared-agent crashes (SIGKILL, real processes)', () => {
  let f: Federation;
  const agents = new Map<string, MemberProcess>();

  beforeAll(async () => {
    f = await Federation.create('rcoord', { aggregators: 1, sites: 3, overrides: recoveryOverrides(4) });
    f.spawn('aggregator', 'agg-1');
    for (const s of SITES) agents.set(s, f.spawn('agent', s));
  });
  afterAll(async () => {
    await f?.stop();
  });

  const logHead = async () => {
    const commits = (await f.decisions()).filter((d) => d.commit);
    return commits.length === 0 ? f.genesis : hex(commits.at(-1)!.commitHash);
  };

  it('a + i: killed after PREPARE, before the append: the restart aborts the round at once; residuals survive it', async () => {
    const a = f.spawn('coordinator', 'coordinator', ['--rounds', '3'], {
      COHORT_FAILPOINT: 'coordinator.prepare-sent@2',
    });
    await waitLine(f, a, /^round 1: .*COMMIT/);
    const round1 = await logHead();
    await waitAllAt(f, SITES, round1);
    await waitFor('round-1 residuals current', () =>
      SITES.every((s) => !residualFiles(f, s).pending.includes('1')),
    );
    const afterRound1 = new Map(SITES.map((s) => [s, residualFiles(f, s).residual]));
    for (const r of afterRound1.values()) expect(r).toBeDefined();
    const killed = await waitExit(a);
    expect(killed.signal).toBe('SIGKILL');
    expect(a.output).toContain('"failpoint":"coordinator.prepare-sent","round":2');
    // Round 2 is open in the log, undecided; every site sent its update and holds its new residual
    // staged, the residual of round 1 still current.
    let decisions = await f.decisions();
    expect(decisions.map((d) => [d.round, d.commit])).toEqual([[1, true]]);
    await waitFor('round-2 residuals staged', () =>
      SITES.every((s) => residualFiles(f, s).pending.includes('2')),
    );
    for (const s of SITES) expect(residualFiles(f, s).residual).toBe(afterRound1.get(s));

    const b = f.spawn('coordinator', 'coordinator', ['--rounds', '3']);
    await waitLine(f, b, /^recovered: round 2 was left undecided by a previous run; aborted/);
    // The abort dropped the staged residuals: the one of round 1 is what round 3 trains with.
    await waitFor('round-2 residuals dropped', () =>
      SITES.every((s) => !residualFiles(f, s).pending.includes('2')),
    );
    for (const s of SITES) expect(residualFiles(f, s).residual).toBe(afterRound1.get(s));
    await waitLine(f, b, /^round 3: 3\/3 contributors, COMMIT/);
    const done = await waitExit(b);
    expect(done.code).toBe(0);
    decisions = await f.decisions();
    expect(decisions.map((d) => [d.round, d.commit])).toEqual([
      [1, true],
      [2, false],
      [3, true],
    ]);
    expect(decisions[1]!.reason).toBe('the coordinator restarted before deciding round 2');
    expectSingleChain(decisions, f.genesis);
    const head = await logHead();
    await waitAllAt(f, SITES, head);
    // Round 3 committed with every update in it: each site's residual moved on from round 1's.
    for (const s of SITES) {
      expect(residualFiles(f, s).pending).toEqual([]);
      expect(residualFiles(f, s).residual).not.toBe(afterRound1.get(s));
    }
  }, 55_000);

  it('b: killed after the append, before announcing, on the last round: agents reach the logged head with no further round', async () => {
    const c = f.spawn('coordinator', 'coordinator', ['--rounds', '5'], {
      COHORT_FAILPOINT: 'coordinator.decision-logged@5',
    });
    await waitLine(f, c, /^round 4: .*COMMIT/);
    expect((await waitExit(c)).signal).toBe('SIGKILL');
    const decisions = await f.decisions();
    expect(decisions.at(-1)).toMatchObject({ round: 5, commit: true });
    const head = hex(decisions.at(-1)!.commitHash);
    // Nobody announced it: the prepared agents read it from the log after their decision timeout.
    await waitAllAt(f, SITES, head);
    // (Their logs reach this process through a pipe: wait for the line rather than race it.)
    await waitFor('each agent to log PREPARED → RECOVERING', () =>
      SITES.every((s) => agents.get(s)!.logged('agent state', { from: 'PREPARED', to: 'RECOVERING' })),
    );
    // A restarted coordinator re-announces the decision and, the last round being decided, runs none.
    const d = f.spawn('coordinator', 'coordinator', ['--rounds', '5']);
    await waitLine(f, d, /^recovered: re-announced the decision of round 5/);
    await waitLine(f, d, /^done: 0 rounds, 0 committed, 0 aborted/);
    expect((await waitExit(d)).code).toBe(0);
    expect((await f.decisions()).map((x) => x.round)).toEqual([1, 2, 3, 4, 5]);
  }, 60_000);

  it('g: a second coordinator started while the first is alive cannot take the lease, nor append', async () => {
    const first = f.spawn('coordinator', 'coordinator', ['--rounds', '0']);
    await waitLine(f, first, /^round 6: /);
    const second = f.spawn('coordinator', 'coordinator', ['--rounds', '0', '--lease-wait', '500']);
    const refused = await waitExit(second);
    expect(refused.code).toBe(2);
    expect(second.output).toMatch(/error \[LEASE_HELD\]/);
    expect(first.running).toBe(true);
    await waitLine(f, first, /^round 7: /);
    first.child.kill('SIGTERM');
    expect((await waitExit(first)).code).toBe(0);
    const decisions = await f.decisions();
    expect(decisions.map((d) => d.round).slice(0, 7)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expectSingleChain(decisions, f.genesis);
    expect(second.lines.filter((l) => l.startsWith('round '))).toEqual([]);
  }, 60_000);

  it('c: an agent killed while PREPARED comes back, commits from the log, and the next round commits with it', async () => {
    // The coordinator stopped in g may have left a round open; the next one aborts it first.
    const entries = await f.logEntries();
    const lastRound = Math.max(
      ...entries.map((e) => e.record.decision?.round ?? e.record.roundOpen?.round ?? 0),
    );
    const r = lastRound + 1;
    agents.get('site-2')!.child.kill('SIGTERM');
    await waitExit(agents.get('site-2')!);
    agents.set('site-2', f.spawn('agent', 'site-2', [], { COHORT_FAILPOINT: `agent.voted@${r}` }));
    const g = f.spawn('coordinator', 'coordinator', ['--rounds', String(r)]);
    await waitLine(f, g, new RegExp(`^round ${r}: 3/3 contributors, COMMIT`));
    const dead = await waitExit(agents.get('site-2')!);
    expect(dead.signal).toBe('SIGKILL');
    expect(agents.get('site-2')!.output).toContain(`"failpoint":"agent.voted","round":${r}`);
    expect((await waitExit(g)).code).toBe(0);
    const committed = (await f.decisions()).find((d) => d.round === r)!;
    expect(committed.commit).toBe(true);
    expect(committed.voters).toEqual(SITES);

    // Back, it finds its candidate prepared, reads the decision from the log and switches to it.
    const revived = f.spawn('agent', 'site-2');
    agents.set('site-2', revived);
    await waitAllAt(f, SITES, hex(committed.commitHash));
    // Its log says how: the candidate found at start, committed by the decision read from the log.
    const transitions = () =>
      revived.events.filter((e) => e.msg === 'agent state').map((e) => `${e.to}: ${e.reason}`);
    await waitFor('the revived agent READY', () => transitions().some((t) => t.startsWith('READY')));
    expect(transitions()[1], transitions().join('\n')).toMatch(/^RECOVERING: prepared candidates for rounds/);
    expect(
      transitions().find((t) => t.startsWith('READY')),
      transitions().join('\n'),
    ).toMatch(new RegExp(`^READY: COMMIT r${r} `));

    const h = f.spawn('coordinator', 'coordinator', ['--rounds', String(r + 1)]);
    await waitLine(f, h, new RegExp(`^round ${r + 1}: 3/3 contributors, COMMIT`));
    expect((await waitExit(h)).code).toBe(0);
    const decisions = await f.decisions();
    expect(decisions.map((d) => d.round)).toEqual([...new Set(decisions.map((d) => d.round))]);
    expectSingleChain(decisions, f.genesis);
    expect(decisions.at(-1)).toMatchObject({ round: r + 1, commit: true, voters: SITES });
    await waitAllAt(f, SITES, hex(decisions.at(-1)!.commitHash));
  }, 60_000);
});
