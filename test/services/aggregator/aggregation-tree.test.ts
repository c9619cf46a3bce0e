// An aggregation tree two levels deep (issue 11) in a real federation: coordinator, four
// aggregators and six site agents in `he` mode over a real nats-server with each member's own NKEY
// user and permissions. `round.tree.rootFanIn` 2 makes two of the aggregators children of the
// other two: their partials travel to their parent aggregator (`subpartial.<parent>.<child>`), which
// adds them to its own sites' sum and sends one partial up. Rounds 1–2 COMMIT with every site, the
// stored aggregate byte-identical to the one-level sum of the stored site updates and every site on
// the same model; in round 3 a leaf aggregator is gone after RoundOpen: its parent cuts it at its
// deadline and the round COMMITs with the other sites. `cohort audit` then verifies the whole log,
// re-adding every aggregate from the stored contributions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CohortConfigInput } from '../../../src/config/index.ts';
import {
  AggregateBuilder,
  BlockVerifier,
  type ControlBodies,
  type DecisionBody,
  RoundTree,
} from '../../../src/protocol/index.ts';
import { encodeAggregateObject } from '../../../src/round/index.ts';
import type { AggregatorService } from '../../../src/services/aggregator/index.ts';
import { buildAggregationTree } from '../../../src/services/coordinator/aggregation-tree.ts';
import type { CoordinatorEvent, CoordinatorSummary } from '../../../src/services/coordinator/index.ts';
import {
  aggregateStore,
  readStoredContribution,
  readWriteOnceObject,
} from '../../../src/services/store/index.ts';
import { TransportError } from '../../../src/transport/index.ts';
import { expectSingleChain, Federation, hex } from '../../helpers/federation.ts';
import { auditLive } from '../../helpers/run-cli.ts';

const LEVEL_WAIT_MS = 1500;
const OVERRIDES: Partial<CohortConfigInput> = {
  round: {
    heartbeatMs: 200,
    missedHeartbeats: 5,
    deadlineMs: 8000,
    voteTimeoutMs: 8000,
    tree: { rootFanIn: 2, fanIn: 4, levelWaitMs: LEVEL_WAIT_MS },
  },
  learning: { model: 'logreg', trainLimit: 400, testLimit: 100, epochs: 1, batchSize: 20 },
  log: { level: 'error' },
};

let f: Federation;
const aggregators = new Map<string, AggregatorService>();
let summary: CoordinatorSummary;
const opens = new Map<number, ControlBodies['round-open']>();
const decisions = new Map<number, DecisionBody & { sequence: number }>();
/** The partial records of each round: which aggregators the coordinator heard from. */
const partialsOf = new Map<number, string[]>();
/** The leaf aggregator stopped right after round 3's RoundOpen. */
let gone: string | undefined;

beforeAll(async () => {
  f = await Federation.create('atree', { aggregators: 4, sites: 6, overrides: OVERRIDES });
  for (const a of f.dep.aggregators) aggregators.set(a, await f.startAggregator(a));
  for (const s of f.dep.sites) await f.startAgent(s);
  const stopping: Promise<void>[] = [];
  const onEvent = (e: CoordinatorEvent) => {
    if (e.type !== 'round-open' || e.round !== 3) return;
    // A leaf (an aggregator whose parent is an aggregator) goes away before any update reaches it:
    // the tree is the one the coordinator built from these assignments (checked against the log below).
    const used = [...new Set(e.assignments.map((a) => a.aggregator))].map((id) => ({ id, capacity: 1 }));
    const parents = buildAggregationTree(used, f.dep.config.round.tree);
    gone = [...parents].find(([a, p]) => p !== '' && ![...parents.values()].includes(a))?.[0];
    if (gone !== undefined) stopping.push(aggregators.get(gone)!.stop());
  };
  summary = await f.runCoordinator(3, onEvent);
  await Promise.all(stopping);
  for (const e of await f.logEntries()) {
    const r = e.record;
    if (r.roundOpen) opens.set(r.roundOpen.round, r.roundOpen);
    if (r.decision) decisions.set(r.decision.round, { ...r.decision, sequence: e.sequence });
    if (r.partial) {
      partialsOf.set(r.partial.round, [...(partialsOf.get(r.partial.round) ?? []), r.partial.aggregator]);
    }
  }
}, 240_000);

afterAll(async () => {
  await f?.stop();
});

/** The decision's contributors, sorted. */
const contributorsOf = (round: number) =>
  (decisions.get(round)!.aggregate?.contributors ?? []).map((c) => c.site).sort();

describe('a two-level aggregation tree over real NATS (he mode)', () => {
  it('RoundOpen names the tree: two aggregators under the coordinator, two under them', () => {
    for (const round of [1, 2, 3]) {
      const open = opens.get(round)!;
      expect(open.parents!.length).toBe(4);
      const tree = RoundTree.of(open);
      expect(tree.levels).toBe(2);
      expect(tree.childrenOf('')).toHaveLength(2);
      for (const top of tree.childrenOf('')) {
        // A child's deadline is the round's, its parent's one level later.
        for (const child of tree.childrenOf(top)) {
          expect(tree.deadlineOf(child)).toBe(open.deadlineUnixMs);
          expect(tree.deadlineOf(top)).toBe(open.deadlineUnixMs + LEVEL_WAIT_MS);
        }
      }
      // Only the coordinator's children's partials reach it, and are logged.
      expect([...partialsOf.get(round)!].sort()).toEqual([...tree.childrenOf('')].sort());
    }
  });

  it('rounds 1–2 COMMIT every site; each aggregate is the one-level sum of the stored site updates', async () => {
    expect(summary.committed).toBe(3);
    expectSingleChain([...decisions.values()], f.genesis);
    const nc = f.coord.transport.connection;
    for (const round of [1, 2]) {
      const d = decisions.get(round)!;
      expect(d.commit).toBe(true);
      expect(contributorsOf(round)).toEqual([...f.dep.sites].sort());
      // Re-add the very site updates the leaves stored, in one level, and compare byte for byte.
      const open = opens.get(round)!;
      const weights = new Map(open.assignments.map((a) => [a.site, a.examples]));
      const verifier = new BlockVerifier({
        context: { federation: open.federation, round, version: open.version, baseCommit: open.baseCommit },
        ckksParamsId: f.coord.ckks.paramsId,
        keys: (id) => (weights.has(id) ? f.coord.keys(id) : undefined),
        allowedAlgorithms: f.dep.config.crypto.signature.allowed,
        kind: 'site-update',
        pinned: { totalParams: open.totalParams, weightOf: (s) => weights.get(s) },
      });
      const builder = new AggregateBuilder(f.coord.ckks);
      try {
        for (const site of contributorsOf(round)) {
          // Stored by the leaf the round assigned the site to, under its own subjects.
          const aggregator = open.assignments.find((a) => a.site === site)!.aggregator;
          const read = await readStoredContribution(
            nc,
            f.dep.config.federation.id,
            { aggregator, round, attempt: open.attempt, site },
            { maxFrames: 1024, maxBytes: 64 << 20, timeoutMs: 5000 },
          );
          if (read.status !== 'found') throw new Error(`contribution of ${site}: ${read.status}`);
          const [manifest, ...blocks] = read.frames;
          builder.add(verifier.verifyUpdate({ manifest: manifest!, blocks }));
        }
        const oneLevel = encodeAggregateObject(builder.finish().ciphertexts);
        const stored = await readWriteOnceObject(
          nc,
          aggregateStore(f.coord.subjects.federation),
          d.aggregate!.object,
          {
            maxBytes: 64 << 20,
            timeoutMs: 5000,
          },
        );
        expect(Buffer.from(stored!).equals(Buffer.from(oneLevel))).toBe(true);
      } finally {
        builder.dispose();
      }
    }
    // Every site switched to the last commit: one model everywhere.
    const head = hex(decisions.get(3)!.commitHash);
    for (const site of f.dep.sites) expect(f.storeHead(site)?.hash).toBe(head);
    // The parents summed their children's partials over NATS; the leaves sent to a parent aggregator.
    const received = [...aggregators.values()].reduce((n, a) => n + a.stats().partialsReceived, 0);
    expect(received).toBeGreaterThanOrEqual(4); // two parents, two rounds
    const tree = RoundTree.of(opens.get(2)!);
    for (const [id, a] of aggregators) {
      if (id === gone) continue;
      expect(a.stats().lastPartial?.parent).toBe(
        tree.parentOf(id) === '' ? f.dep.coordinator : tree.parentOf(id),
      );
    }
  });

  it('round 3: the stopped leaf’s subtree is left out at its parent’s deadline, and the round COMMITs', () => {
    expect(gone).toBeDefined();
    const open = opens.get(3)!;
    const tree = RoundTree.of(open);
    expect(tree.parentOf(gone!)).not.toBe('');
    expect(tree.childrenOf(gone!)).toEqual([]);
    const lost = open.assignments.filter((a) => a.aggregator === gone).map((a) => a.site);
    expect(lost.length).toBeGreaterThan(0);
    const d = decisions.get(3)!;
    expect(d.commit).toBe(true);
    expect(contributorsOf(3)).toEqual(f.dep.sites.filter((s) => !lost.includes(s)).sort());
    // Its parent still sent one partial, without the leaf, and the coordinator logged both tops.
    const parent = tree.parentOf(gone!)!;
    const p = aggregators.get(parent)!.stats().lastPartial!;
    expect(p).toMatchObject({ round: 3, sent: true });
    expect(p.sites.some((s) => lost.includes(s))).toBe(false);
    expect([...partialsOf.get(3)!].sort()).toEqual([...tree.childrenOf('')].sort());
    const r3 = summary.rounds.find((r) => r.round === 3)!;
    expect(r3.contributors).toBe(f.dep.sites.length - lost.length);
  });

  it('cohort audit verifies the log and re-adds every aggregate from the stored contributions', async () => {
    const report = await auditLive(f.dep.configPath);
    expect(report.problems).toEqual([]);
    expect(report.unchecked).toEqual([]);
    expect(report.checked.recomputed).toBe(3);
    expect(report.checked.partials).toBe([...partialsOf.values()].reduce((n, l) => n + l.length, 0));
  });

  it('lets no site send a partial to an aggregator, nor an aggregator send one under another’s name', async () => {
    const site = await f.member(f.dep.sites[0]!);
    const [a, b] = f.dep.aggregators as [string, string];
    const agg = await f.member(a);
    for (const [who, subject] of [
      [site, site.subjects.subpartial(a, site.member)],
      [agg, agg.subjects.subpartial(b, b)],
      [agg, agg.subjects.partial(b)],
    ] as const) {
      const err = await who.transport.request(subject, Uint8Array.of(1)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TransportError);
      expect((err as TransportError).code).toBe('TRANSPORT_PERMISSION');
    }
  });
});
