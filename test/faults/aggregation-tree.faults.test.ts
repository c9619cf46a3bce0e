// A parent aggregator of a two-level aggregation tree failing mid-round, as real processes: four
// aggregators, `round.tree.rootFanIn` 2, so two of them sum another aggregator's partial before
// the coordinator does. The parent is SIGKILLed right after a child's partial joined its sum
// (failpoint `aggregator.child-partial-added`: before that child's ack and before its own
// partial), and restarted at once. Its whole subtree is lost for the round: the round commits
// with the other subtree's sites (or aborts cleanly with too few), once, and the next commits.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../src/config/index.ts';
import { RoundTree } from '../../src/protocol/index.ts';
import { buildAggregationTree } from '../../src/services/coordinator/aggregation-tree.ts';
import { assignBounded, createRing } from '../../src/tree/index.ts';
import { Federation, type MemberProcess, waitExit, waitFor, waitLine } from '../recovery/recovery-helpers.ts';
import { decisionOf, finishCase, lastRound } from './fault-checks.ts';
import { faultOverrides, startMember, startMembers } from './fault-federation.ts';

const AGGREGATORS = ['agg-1', 'agg-2', 'agg-3', 'agg-4'];
const SITES = ['site-1', 'site-2', 'site-3', 'site-4', 'site-5'];
const POINT = 'aggregator.child-partial-added';
const base = faultOverrides(SITES.length, 12_000);
const overrides: Partial<CohortConfigInput> = {
  ...base,
  round: {
    ...base.round,
    tree: { rootFanIn: 2, fanIn: 4, levelWaitMs: 2000 },
    // The lost subtree is most of the sites: the breaker would sit them out or freeze training,
    // which is its own tests' subject; here the round after the fault runs with every site.
    breaker: { enabled: false },
  },
};
const MS = 150_000;
/** Rounds the coordinator runs: the fault hits the first that makes the armed aggregator a parent. */
const ROUNDS = 3;

/**
 * Each aggregator's parent (`''`: the coordinator) in a round that assigns every site with every
 * aggregator live, as the coordinator builds it (`runTrainingRound`: `assignBounded`, then
 * `buildAggregationTree` over the aggregators assigned sites). Only picks which aggregator to
 * arm; the case checks the logged RoundOpen of the faulted round for the tree it really had.
 */
function expectedParents(f: Federation): Map<string, string> {
  const cfg = f.dep.config;
  const capacity = new Map(cfg.members!.aggregators.map((a) => [a.id, a.capacity]));
  const ring = createRing(AGGREGATORS.map((id) => ({ id, capacity: capacity.get(id) ?? 1 })));
  const used = [...new Set(assignBounded(ring, SITES, cfg.round.epsilon).values())].sort();
  return buildAggregationTree(
    used.map((id) => ({ id, capacity: capacity.get(id) ?? 1 })),
    cfg.round.tree,
  );
}

describe('fault suite: a parent aggregator of an aggregation tree failing mid-round', () => {
  let f: Federation;
  let procs = new Map<string, MemberProcess>();
  /** The aggregator armed with the failpoint: a parent of another in the expected tree. */
  let parent: string;

  beforeAll(async () => {
    f = await Federation.create('ftree', { aggregators: AGGREGATORS.length, sites: SITES.length, overrides });
    const parents = expectedParents(f);
    const parentsOf = [...new Set(parents.values())].filter((p) => p !== '').sort();
    expect(parentsOf.length, `a two-level tree from ${JSON.stringify([...parents])}`).toBeGreaterThan(0);
    parent = parentsOf[0]!;
    const armed = await startMember(f, 'aggregator', parent, { COHORT_FAILPOINT: POINT });
    procs = await startMembers(
      f,
      AGGREGATORS.filter((a) => a !== parent),
      SITES,
    );
    procs.set(parent, armed);
  });
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.error(f.dumpOutput());
  });
  afterAll(async () => {
    await f?.stop();
  });

  it(
    'aggregator-tree-parent: SIGKILL after a child partial joined its sum, restart; the round decides without its subtree',
    async () => {
      const before = await f.logEntries();
      const r0 = lastRound(before);
      const agg = procs.get(parent)!;
      const coordinator = f.spawn('coordinator', 'coordinator', ['--rounds', String(r0 + ROUNDS)]);
      // Either the parent dies at the failpoint, or the coordinator ends without it firing (failure).
      await waitFor(`${parent} to hit ${POINT}`, () => !agg.running || !coordinator.running, MS);
      const dead = await waitExit(agg, MS);
      expect(dead.signal, agg.output).toBe('SIGKILL');
      const m = new RegExp(`"failpoint":"${POINT.replaceAll('.', '\\.')}","round":(\\d+)`).exec(agg.output);
      expect(m, `${parent} reports failpoint ${POINT}`).not.toBeNull();
      const r = Number(m![1]);
      procs.set(parent, await startMember(f, 'aggregator', parent));
      expect(r, `the fault hit round ${r}, before the last round ${r0 + ROUNDS}`).toBeLessThan(r0 + ROUNDS);
      await waitLine(f, coordinator, new RegExp(`^round ${r0 + ROUNDS}: `), MS);
      expect((await waitExit(coordinator, MS)).code, coordinator.output).toBe(0);

      const { entries } = await finishCase(f, {
        id: 'aggregator-tree-parent',
        fault: 'parent aggregator of a two-level tree SIGKILLed (failpoint), restarted at once',
        injectedAt: `r${r}: a child's partial added to its sum, ack and its own partial not sent`,
        before,
        sites: SITES,
      });
      // The faulted round really had a tree in which the killed aggregator was a parent.
      const open = entries.find((e) => e.record.roundOpen?.round === r)!.record.roundOpen!;
      const tree = RoundTree.of(open);
      expect(tree.levels).toBe(2);
      const children = tree.childrenOf(parent);
      expect(children.length, `${parent}'s children in r${r}`).toBeGreaterThan(0);
      // Its subtree is lost: no partial of it reached the log, and the child's partial failed.
      expect(
        entries.some((e) => e.record.partial?.round === r && e.record.partial.aggregator === parent),
      ).toBe(false);
      for (const child of children) {
        const events = procs.get(child)!.events;
        expect(
          events.some((e) => e.msg === 'partial aggregate not delivered' && e.round === r),
          `${child}'s partial to ${parent} in r${r} not delivered`,
        ).toBe(true);
      }
      // Only the coordinator's other children sent partials, none listing a site of the subtree.
      const lost = open.assignments.filter((a) => tree.covers(parent, a.site)).map((a) => a.site);
      expect(lost.length).toBeGreaterThan(0);
      const d = decisionOf(entries, r);
      if (d.commit) {
        const summed = d.aggregate!.contributors.map((c) => c.site);
        for (const site of lost) expect(summed).not.toContain(site);
        expect(summed.length).toBeGreaterThan(0);
      }
      expect(decisionOf(entries, r + 1).commit).toBe(true);
    },
    2 * MS,
  );
});
