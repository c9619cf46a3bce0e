// Sites and aggregators failing mid-round, as real processes: a site SIGKILLed between the blocks
// of its upload, a site frozen by SIGSTOP while it trains, an aggregator SIGKILLed with part of
// the round's sum built. The coordinator runs as a process too (three rounds per case: the fault
// hits the first round that assigns the armed member, and at least one round follows). Rounds that
// miss a member wait for its deadline, kept short here.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Federation, type MemberProcess, waitExit, waitFor, waitLine } from '../recovery/recovery-helpers.ts';
import { decisionOf, finishCase, lastRound } from './fault-checks.ts';
import { faultOverrides, startMember, startMembers } from './fault-federation.ts';

const SITES = ['site-1', 'site-2', 'site-3', 'site-4'];
const AGGREGATORS = ['agg-1', 'agg-2'];
// Quorum: every member (the quorum counts aggregators with sites), so each round assigns all four
// sites, two under each aggregator, and a round that loses one site or one aggregator still has
// round.minContributors (2) sites to commit with. A round that waits for a dead or frozen member
// ends at its deadline: short, yet far above the second or two a round takes here.
const overrides = faultOverrides(SITES.length + AGGREGATORS.length, 12_000);
const MS = 150_000;

/** The faulted round commits, and its decision does not count the faulted member's update. */
function commitsWithout(entries: Parameters<typeof decisionOf>[0], round: number, site: string): void {
  const d = decisionOf(entries, round);
  expect(d.commit, `r${round}: ${d.reason}`).toBe(true);
  expect(d.aggregate!.contributors.map((c) => c.site)).not.toContain(site);
}

describe('fault suite: sites and aggregators failing mid-round', () => {
  let f: Federation;
  let procs = new Map<string, MemberProcess>();

  /** Stops member `id` (SIGTERM) and starts it again with `env`; resolves once it is up. */
  const respawn = async (
    role: 'agent' | 'aggregator',
    id: string,
    env: Record<string, string> = {},
  ): Promise<MemberProcess> => {
    const old = procs.get(id);
    if (old?.running) {
      old.child.kill('SIGTERM');
      await waitExit(old);
    }
    const p = await startMember(f, role, id, env);
    procs.set(id, p);
    return p;
  };

  beforeAll(async () => {
    f = await Federation.create('fmembers', { aggregators: 2, sites: 4, overrides });
    procs = await startMembers(f, AGGREGATORS, SITES);
  });
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.error(f.dumpOutput());
  });
  afterAll(async () => {
    await f?.stop();
  });

  /** The round in which `p` hit failpoint `point` (its stderr line says). */
  const failpointRound = (p: MemberProcess, point: string): number => {
    const m = new RegExp(`"failpoint":"${point}","round":(\\d+)`).exec(p.output);
    expect(m, `${p.id} reports failpoint ${point}`).not.toBeNull();
    return Number(m![1]);
  };
  /**
   * A coordinator process running up to ROUNDS rounds after the log's last: which round assigns
   * the faulted member is not fixed (the coordinator admits the sites at the head when the round
   * opens), so the failpoints are armed for any round and the case reads which one it hit.
   */
  const ROUNDS = 3;
  const runCoordinator = (after: number) =>
    f.spawn('coordinator', 'coordinator', ['--rounds', String(after + ROUNDS)]);
  /** Waits for the coordinator to finish its rounds; the faulted round `r` must not be its last. */
  const finishRounds = async (coordinator: MemberProcess, after: number, r: number) => {
    expect(r, `the fault hit round ${r}, before the last round ${after + ROUNDS}`).toBeLessThan(
      after + ROUNDS,
    );
    await waitLine(f, coordinator, new RegExp(`^round ${after + ROUNDS}: `), MS);
    expect((await waitExit(coordinator, MS)).code, coordinator.output).toBe(0);
  };

  it(
    'site-mid-upload: SIGKILL between blocks of its update, restart; the round goes on without it',
    async () => {
      const before = await f.logEntries();
      const r0 = lastRound(before);
      const site = await respawn('agent', 'site-1', { COHORT_FAILPOINT: 'agent.update-block-sent' });
      const coordinator = runCoordinator(r0);
      const dead = await waitExit(site, MS);
      expect(dead.signal, site.output).toBe('SIGKILL');
      const r = failpointRound(site, 'agent.update-block-sent');
      procs.set('site-1', await startMember(f, 'agent', 'site-1'));
      await finishRounds(coordinator, r0, r);
      const { entries } = await finishCase(f, {
        id: 'site-mid-upload',
        fault: 'site SIGKILLed (failpoint), restarted at once',
        injectedAt: `r${r}: first block acknowledged, manifest not sent`,
        before,
        sites: SITES,
      });
      commitsWithout(entries, r, 'site-1');
      expect(decisionOf(entries, r + 1).commit).toBe(true);
    },
    2 * MS,
  );

  it(
    'site-hung: SIGSTOP while it trains, SIGCONT after the decision; it catches up',
    async () => {
      const before = await f.logEntries();
      const r0 = lastRound(before);
      const site = procs.get('site-2')!;
      const training = () =>
        site.events
          .filter((e) => e.msg === 'agent state' && e.to === 'TRAINING')
          .map((e) => Number(/^RoundOpen r(\d+)$/.exec(String(e.reason))?.[1] ?? 0))
          .find((n) => n > r0);
      const coordinator = runCoordinator(r0);
      await waitFor('site-2 to train', () => training() !== undefined, MS);
      site.child.kill('SIGSTOP');
      const r = training()!;
      const stoppedIn = String(site.events.filter((e) => e.msg === 'agent state').at(-1)?.to);
      try {
        await waitLine(f, coordinator, new RegExp(`^round ${r}: `), MS);
      } finally {
        site.child.kill('SIGCONT');
      }
      await finishRounds(coordinator, r0, r);
      expect(site.running).toBe(true);
      const { entries } = await finishCase(f, {
        id: 'site-hung',
        fault: 'site SIGSTOPped, SIGCONT once the round was decided',
        injectedAt: `r${r}: site ${stoppedIn} (its last state logged)`,
        before,
        sites: SITES,
      });
      expect(decisionOf(entries, r).voters).not.toContain('site-2');
      commitsWithout(entries, r, 'site-2');
      expect(decisionOf(entries, r + 1).commit).toBe(true);
    },
    2 * MS,
  );

  it(
    'aggregator-mid-sum: SIGKILL after adding an update to its sum, restart; the round decides without its partial',
    async () => {
      const before = await f.logEntries();
      const r0 = lastRound(before);
      const agg = await respawn('aggregator', 'agg-1', { COHORT_FAILPOINT: 'aggregator.update-added' });
      const coordinator = runCoordinator(r0);
      const dead = await waitExit(agg, MS);
      expect(dead.signal, agg.output).toBe('SIGKILL');
      const r = failpointRound(agg, 'aggregator.update-added');
      procs.set('agg-1', await startMember(f, 'aggregator', 'agg-1'));
      await finishRounds(coordinator, r0, r);
      const { entries } = await finishCase(f, {
        id: 'aggregator-mid-sum',
        fault: 'aggregator SIGKILLed (failpoint), restarted at once',
        injectedAt: `r${r}: a site's update added to its sum, ack and partial not sent`,
        before,
        sites: SITES,
      });
      // Nothing of the dead aggregator's sum reached the decision: no partial of agg-1 for round r.
      expect(
        entries.some((e) => e.record.partial?.round === r && e.record.partial.aggregator === 'agg-1'),
      ).toBe(false);
      const open = entries.find((e) => e.record.roundOpen?.round === r)!.record.roundOpen!;
      const lost = open.assignments.filter((x) => x.aggregator === 'agg-1').map((x) => x.site);
      expect(lost.length, 'agg-1 was assigned sites in the faulted round').toBeGreaterThan(0);
      for (const site of lost) commitsWithout(entries, r, site);
      expect(decisionOf(entries, r + 1).commit).toBe(true);
    },
    2 * MS,
  );
});
