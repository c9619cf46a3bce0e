// Sites that fall behind, misbehave or arrive late, and a rollback, with every member a real
// `cohort` process over a real nats-server with JetStream; one coordinator runs throughout:
//   d. an agent offline (SIGKILL) for three commits comes back, catches up by replaying the log,
//      and the next round commits with it;
//   h. a site that heartbeats but never votes is excluded after one round; the next round commits;
//      once it behaves and has caught up it is readmitted;
//   e. a site enrolled mid-training starts from a snapshot and contributes;
//   f. a rollback three commits back is decided by 2PC, training continues, the log shows it.
// Each case checks the voters of the rounds that follow (a YES names the very commit, so every
// voter holds the same model); at the end every agent is on the logged head and the log is one
// verified chain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getCkksContext } from '../../crypto/ckks/index.ts';
import { enrollSite } from '../../src/services/index.ts';
import { expectSingleChain } from '../helpers/federation.ts';
import { cohort } from '../helpers/run-cli.ts';
import {
  Federation,
  hex,
  type MemberProcess,
  recoveryOverrides,
  waitAllAt,
  waitExit,
  waitFor,
  waitLine,
} from './recovery-helpers.ts';

const FIRST = ['site-1', 'site-2', 'site-3'];
const ALL = [...FIRST, 'site-4'];

describe('sites behind, silent, late, and a rollback (real processes)', () => {
  let f: Federation;
  let coordinator: MemberProcess;
  const agents = new Map<string, MemberProcess>();

  /** The first round the coordinator opens after `line` matched, for rounds whose line matches `re`. */
  const roundLines = (re: RegExp) => coordinator.lines.filter((l) => re.test(l));
  const lastDecision = async () => (await f.decisions()).at(-1)!;
  const headNow = async () => {
    const d = (await f.decisions()).filter((x) => x.commit).at(-1)!;
    return { hash: hex(d.commitHash), height: d.height, round: d.round };
  };
  /** Waits for the coordinator to decide a round after `after` whose line matches `re`. */
  const nextRoundLike = async (after: number, re: RegExp) => {
    await waitFor(
      `a round after ${after} matching ${re}`,
      () => roundLines(/^round \d+: /).some((l) => Number(/^round (\d+)/.exec(l)![1]) > after && re.test(l)),
      60_000,
    );
    const line = roundLines(/^round \d+: /).find(
      (l) => Number(/^round (\d+)/.exec(l)![1]) > after && re.test(l),
    )!;
    return Number(/^round (\d+)/.exec(line)![1]);
  };

  /** The first decision after round `after` that `matches` (read from the log as rounds are decided). */
  const firstDecision = async (
    after: number,
    matches: (d: Awaited<ReturnType<Federation['decisions']>>[number]) => boolean,
  ) => {
    let seen = -1;
    let found: number | undefined;
    await waitFor(
      `a decision after round ${after} that matches`,
      async () => {
        const decided = roundLines(/^round \d+: \d+\/\d+ contributors, /).length;
        if (decided === seen) return false;
        seen = decided;
        found = (await f.decisions()).find((d) => d.round > after && matches(d))?.round;
        return found !== undefined;
      },
      60_000,
    );
    return found!;
  };

  beforeAll(async () => {
    f = await Federation.create('rsites', {
      aggregators: 1,
      sites: 4,
      overrides: recoveryOverrides(4, {
        history: { leaseMs: 1500, snapshotEvery: 6, decisionTimeoutMs: 3000 },
        // A site restarted mid-round leaves its round waiting for this deadline.
        // Sites are killed mid-round here: a round of the two left must still commit.
        round: {
          heartbeatMs: 200,
          missedHeartbeats: 10,
          deadlineMs: 6000,
          voteTimeoutMs: 6000,
          quorum: 4,
          minContributors: 2,
        },
      }),
      unenrolled: ['site-4'],
    });
    // site-4 is not enrolled yet: it has its NATS user, but no keys and no registry entry.
    f.spawn('aggregator', 'agg-1');
    for (const s of FIRST) agents.set(s, f.spawn('agent', s));
  });
  afterAll(async () => {
    await f?.stop();
  });

  it('d: an agent offline for three commits catches up by replay and the next round commits with it', async () => {
    // A first coordinator runs exactly rounds 1-4, so site-3 misses three commits, not more.
    const first = f.spawn('coordinator', 'coordinator', ['--rounds', '4']);
    await waitLine(f, first, /^round 1: 3\/3 contributors, COMMIT/);
    agents.get('site-3')!.child.kill('SIGKILL');
    await waitExit(agents.get('site-3')!);
    await waitLine(f, first, /^done: /);
    expect((await waitExit(first)).code).toBe(0);
    const missed = (await f.decisions()).filter((d) => d.round > 1);
    expect(missed.map((d) => [d.round, d.commit])).toEqual([
      [2, true],
      [3, true],
      [4, true],
    ]);
    for (const d of missed) expect(d.voters).not.toContain('site-3');

    const back = f.spawn('agent', 'site-3');
    agents.set('site-3', back);
    await waitFor('site-3 caught up', () => back.logged('caught up with the log'), 30_000);
    const caught = back.events.find((e) => e.msg === 'caught up with the log')!;
    expect(caught).toMatchObject({ advanced: 3, replayed: 3, height: 4 });
    expect(back.logged('joined from a snapshot')).toBe(false);
    expect(f.storeHead('site-3')!.hash).toBe(hex(missed.at(-1)!.commitHash));

    coordinator = f.spawn('coordinator', 'coordinator', ['--rounds', '0']);
    await waitLine(f, coordinator, /^round 5: 3\/3 contributors, COMMIT/);
    const decision = (await f.decisions()).find((d) => d.round === 5)!;
    expect(decision.voters).toEqual(FIRST);
    expect(decision.aggregate!.contributors.map((c) => c.site)).toContain('site-3');
    // Every voter voted YES for that very commit: site-3 computed the same model as the others.
  }, 90_000);

  it('h: a site that never votes is excluded after one round, the next round commits, and it is readmitted once it behaves', async () => {
    agents.get('site-2')!.child.kill('SIGTERM');
    await waitExit(agents.get('site-2')!);
    const start = (await lastDecision()).round;
    agents.set('site-2', f.spawn('agent', 'site-2', [], { COHORT_FAILPOINT: 'agent.prepare:skip' }));
    // Its first round as a voter that commits without its vote: a round in flight at the restart
    // may have it (back at the head) as a voter, or not (PREPARE went out before it was back).
    const silent = await firstDecision(start, (d) => d.commit && d.missing.includes('site-2'));
    const decisions = await f.decisions();
    const d1 = decisions.find((d) => d.round === silent)!;
    const before = decisions.filter((d) => d.round < silent).at(-1)!;
    const priorStrikes = before.exclusions.find((x) => x.site === 'site-2')?.strikes ?? 0;
    expect(d1.missing).toEqual(['site-2']);
    expect(d1.exclusions).toContainEqual({
      site: 'site-2',
      strikes: priorStrikes + 1,
      sinceRound: silent,
      atHeight: d1.height - 1,
      excluded: true,
    });
    await waitLine(f, coordinator, new RegExp(`^round ${silent}: site-2 excluded \\(did not vote\\)`));
    const next = await nextRoundLike(silent, /COMMIT/);
    expect(next).toBe(silent + 1);
    const d2 = (await f.decisions()).find((d) => d.round === next)!;
    expect(d2.voters).toEqual(['site-1', 'site-3']);
    expect(d2.missing).toEqual([]);

    // It behaves again: it catches up from the log and is readmitted after sitting its round out.
    agents.get('site-2')!.child.kill('SIGTERM');
    await waitExit(agents.get('site-2')!);
    agents.set('site-2', f.spawn('agent', 'site-2'));
    await waitLine(f, coordinator, /^site-2 readmitted/);
    const back = await nextRoundLike(next, /3\/3 contributors, COMMIT/);
    const d3 = (await f.decisions()).find((d) => d.round === back)!;
    expect(d3.voters).toEqual(FIRST);
    expect(d3.exclusions).toEqual([]); // its YES in a committed round cleared its strikes
  }, 120_000);

  it('e: a site enrolled mid-training joins from a snapshot and contributes', async () => {
    await waitLine(f, coordinator, /^snapshot of height 6 stored/);
    const ckks = await getCkksContext({
      polyModulusDegree: 8192,
      coeffModulus: [60, 40, 60],
      scaleBits: 16,
      exactBits: 42,
    });
    const files = enrollSite({
      dir: f.dep.config.members!.keysDir,
      federation: 'rsites',
      sponsor: 'site-1',
      site: 'site-4',
      algorithm: 'falcon-512',
      // Under threshold keys the sponsor has no CKKS key to give: site-4 joins through a re-sharing.
      ckks: f.dep.config.crypto.keys === 'threshold' ? undefined : ckks,
    });
    // The registry officer logs the enrollment (from the next round): members accept its key then.
    const enrolled = await cohort(
      'registry',
      'enroll',
      '--config',
      f.dep.configPath,
      '--officer-key',
      f.dep.officer.key,
      '--member',
      'site-4',
      '--signing-pub',
      files.signingPublicKey,
      '--kem-pub',
      files.kemPublicKey,
      '--wait',
    );
    expect(enrolled.status, enrolled.stderr).toBe(0);
    const fresh = f.spawn('agent', 'site-4');
    agents.set('site-4', fresh);
    await waitFor('site-4 joined from a snapshot', () => fresh.logged('joined from a snapshot'), 30_000);
    const joined = fresh.events.find((e) => e.msg === 'joined from a snapshot')!;
    expect(joined.height).toBeGreaterThanOrEqual(6);
    const start = (await lastDecision()).round;
    const r = await nextRoundLike(start, /4\/4 contributors, COMMIT/);
    const decision = (await f.decisions()).find((d) => d.round === r)!;
    expect(decision.voters).toEqual(ALL);
    expect(decision.aggregate!.contributors.map((c) => c.site)).toContain('site-4');
  }, 90_000);

  it('f: a rollback three commits back is decided by 2PC, training continues, and the log shows it', async () => {
    const head = await headNow();
    const decisions = await f.decisions();
    const target = decisions.find((d) => d.commit && d.height === head.height - 3)!;
    // The operator's command, on the coordinator's host: a signed request, then the decision.
    const run = await cohort(
      'versions',
      'rollback',
      `@${head.height - 3}`,
      '--config',
      f.dep.configPath,
      '--reason',
      'test: undo three commits',
      '--wait',
    );
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.split('\n')[0]!)).toMatchObject({
      queued: true,
      target: hex(target.commitHash),
      height: head.height - 3,
    });
    expect(run.stdout).toMatch(/COMMIT [0-9a-f]{12,64} height \d+/);
    expect(coordinator.lines.some((l) => /ROLLBACK COMMIT/.test(l))).toBe(true);
    const rolled = (await f.decisions()).find((d) => d.kind === 'rollback')!;
    expect(rolled.commit).toBe(true);
    expect(hex(rolled.rollbackTarget)).toBe(hex(target.commitHash));
    expect(hex(rolled.modelHash)).toBe(hex(target.modelHash));
    expect(rolled.height).toBeGreaterThan(head.height);
    const after = await nextRoundLike(rolled.round, /COMMIT/);
    const next = (await f.decisions()).find((d) => d.round === after)!;
    expect(hex(next.parent)).toBe(hex(rolled.commitHash));

    // The coordinator stops; every agent ends on the log's head, and the log is one chain.
    coordinator.child.kill('SIGTERM');
    expect((await waitExit(coordinator)).code).toBe(0);
    const all = await f.decisions();
    await waitAllAt(f, ALL, hex(all.filter((d) => d.commit).at(-1)!.commitHash));
    expectSingleChain(all, f.genesis);
    expect(new Set(all.map((d) => d.round)).size).toBe(all.length);

    // An auditor, with read-only access to the log only, reads the same history, rollback included.
    const audit = await cohort(
      'versions',
      'log',
      '--config',
      f.dep.configPath,
      '--member',
      'auditor-1',
      '--json',
    );
    expect(audit.status, audit.stderr).toBe(0);
    const commits = JSON.parse(audit.stdout) as { hash: string; kind: string; rollbackTarget: string }[];
    expect(commits[0]!.hash).toBe(hex(all.filter((d) => d.commit).at(-1)!.commitHash));
    expect(commits.find((c) => c.kind === 'rollback')!.rollbackTarget).toBe(hex(target.commitHash));
  }, 90_000);
});
