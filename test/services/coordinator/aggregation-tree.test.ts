// The aggregation tree (issue 11): which aggregator sends its partial to which (RoundOpen's
// `parents`), built deterministically within the configured fan-ins, read back identically by
// everyone holding the RoundOpen, and the parent's intake of a child's partial (real CKKS, real
// signatures): sites anywhere below the child, each backed by its own manifest, and nothing else.
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPair, type SigningKeyPair } from '../../../crypto/signature/index.ts';
import {
  AggregateBuilder,
  type Assignment,
  BlockVerifier,
  codecEncoding,
  DEFAULT_CODEC_OPTIONS,
  type EncodedUpdate,
  encodeAggregate,
  encodeUpdate,
  RoundTree,
  sumUpdates,
  type TreeLink,
} from '../../../src/protocol/index.ts';
import { PartialIntake } from '../../../src/round/index.ts';
import { buildAggregationTree, treeLinks } from '../../../src/services/coordinator/aggregation-tree.ts';
import { type CodecFixture, codecFixture, randomUpdate, roundContext } from '../../helpers/codec-fixture.ts';
import { blockReason, errorCode } from '../../helpers/error-code.ts';

const nodes = (n: number, capacity = (_i: number) => 1) =>
  Array.from({ length: n }, (_, i) => ({ id: `agg-${i + 1}`, capacity: capacity(i) }));

/** Each aggregator's chain of parents up to the coordinator (throws on a cycle). */
function chain(parents: ReadonlyMap<string, string>, id: string): string[] {
  const out: string[] = [];
  for (let a = id; a !== ''; a = parents.get(a)!) {
    expect(parents.has(a)).toBe(true);
    out.push(a);
    if (out.length > parents.size) throw new Error(`cycle through ${id}`);
  }
  return out;
}

function childCounts(parents: ReadonlyMap<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of parents.values()) counts.set(p, (counts.get(p) ?? 0) + 1);
  return counts;
}

describe('buildAggregationTree', () => {
  it('keeps one level while the aggregators fit the root’s fan-in', () => {
    for (const n of [1, 3, 8]) {
      const parents = buildAggregationTree(nodes(n), { rootFanIn: 8, fanIn: 2 });
      expect([...parents.keys()].sort()).toEqual(
        nodes(n)
          .map((x) => x.id)
          .sort(),
      );
      expect([...parents.values()].every((p) => p === '')).toBe(true);
      expect(treeLinks(parents, 1_000, 500)).toEqual([]);
    }
  });

  it('builds a deeper tree within the fan-ins, every chain ending at the coordinator', () => {
    for (const [n, rootFanIn, fanIn, levels] of [
      [4, 1, 8, 2],
      [4, 2, 8, 2],
      [11, 2, 2, 3], // 2 + 4 + 5
      [30, 3, 3, 3], // 3 + 9 + 18
      [7, 1, 1, 7], // a chain
    ] as const) {
      const parents = buildAggregationTree(nodes(n), { rootFanIn, fanIn });
      expect(parents.size).toBe(n);
      const counts = childCounts(parents);
      expect(counts.get('')).toBe(Math.min(n, rootFanIn));
      for (const [p, k] of counts) if (p !== '') expect(k).toBeLessThanOrEqual(fanIn);
      const depths = [...parents.keys()].map((id) => chain(parents, id).length);
      expect(Math.max(...depths)).toBe(levels);
      // Levels fill up before a new one starts, and each level spreads its children evenly.
      const byDepth = new Map<number, string[]>();
      for (const id of parents.keys()) {
        const d = chain(parents, id).length;
        byDepth.set(d, [...(byDepth.get(d) ?? []), id]);
      }
      for (let d = 2; d <= levels; d++) {
        const loads = byDepth.get(d - 1)!.map((p) => counts.get(p) ?? 0);
        if (d < levels) expect(Math.min(...loads)).toBe(fanIn);
        expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
      }
    }
  });

  it('is a pure function of the ids, capacities and limits (input order does not matter)', () => {
    const list = nodes(13);
    const a = buildAggregationTree(list, { rootFanIn: 2, fanIn: 3 });
    const b = buildAggregationTree([...list].reverse(), { rootFanIn: 2, fanIn: 3 });
    expect([...b].sort()).toEqual([...a].sort());
    // Other limits give another tree: the result does depend on them.
    const c = buildAggregationTree(list, { rootFanIn: 3, fanIn: 3 });
    expect(childCounts(c).get('')).toBe(3);
  });

  it('keeps the coordinator’s children when an aggregator below them leaves (rendezvous hashing)', () => {
    const list = nodes(12);
    const before = buildAggregationTree(list, { rootFanIn: 3, fanIn: 8 });
    const top = [...before].filter(([, p]) => p === '').map(([id]) => id);
    const leaf = [...before].find(([, p]) => p !== '')![0];
    const after = buildAggregationTree(
      list.filter((x) => x.id !== leaf),
      { rootFanIn: 3, fanIn: 8 },
    );
    expect([...after].filter(([, p]) => p === '').map(([id]) => id)).toEqual(top);
  });

  it('ranks high-capacity aggregators towards the root', () => {
    // agg-1 has 1000 times the capacity of each other: it is among the coordinator's children.
    const parents = buildAggregationTree(
      nodes(20, (i) => (i === 0 ? 1000 : 1)),
      { rootFanIn: 2, fanIn: 20 },
    );
    expect(parents.get('agg-1')).toBe('');
  });

  it('refuses impossible limits and nodes, naming the argument', () => {
    expect(errorCode(() => buildAggregationTree(nodes(3), { rootFanIn: 0, fanIn: 2 }))).toBe(
      'INVALID_ARGUMENT',
    );
    expect(() => buildAggregationTree(nodes(3), { rootFanIn: 1, fanIn: 0 })).toThrow(/limits\.fanIn/);
    expect(() =>
      buildAggregationTree([...nodes(2), { id: 'agg-1', capacity: 1 }], { rootFanIn: 1, fanIn: 2 }),
    ).toThrow(/nodes\[2\]\.id/);
    expect(() => buildAggregationTree([{ id: 'a', capacity: 0 }], { rootFanIn: 1, fanIn: 2 })).toThrow(
      /nodes\[0\]\.capacity/,
    );
  });
});

describe('treeLinks and RoundTree', () => {
  const assignments = (pairs: [string, string][]): Assignment[] =>
    pairs.map(([site, aggregator]) => ({ site, aggregator, examples: 1 }));

  it('gives each parent a deadline after its latest child’s, and reads back the same tree', () => {
    const parents = buildAggregationTree(nodes(11), { rootFanIn: 2, fanIn: 2 });
    const links = treeLinks(parents, 10_000, 500);
    expect(links.map((l) => l.aggregator)).toEqual([...parents.keys()].sort());
    const deadline = new Map(links.map((l) => [l.aggregator, l.deadlineUnixMs]));
    for (const l of links) {
      if (l.parent !== '') expect(deadline.get(l.aggregator)!).toBeLessThan(deadline.get(l.parent)!);
      // A leaf keeps the round's deadline; a parent waits one level longer than its latest child.
      const kids = links.filter((k) => k.parent === l.aggregator);
      expect(l.deadlineUnixMs).toBe(
        kids.length === 0 ? 10_000 : Math.max(...kids.map((k) => k.deadlineUnixMs)) + 500,
      );
    }
    const sites = assignments([...parents.keys()].map((a, i) => [`site-${i}`, a]));
    const tree = RoundTree.of({ assignments: sites, parents: links, deadlineUnixMs: 10_000 });
    expect(tree.levels).toBe(3);
    expect(tree.lastDeadlineUnixMs).toBe(11_000);
    expect(tree.childrenOf('')).toEqual(
      [...parents]
        .filter(([, p]) => p === '')
        .map(([a]) => a)
        .sort(),
    );
    for (const a of parents.keys()) {
      expect(tree.parentOf(a)).toBe(parents.get(a));
      expect(tree.depthOf(a)).toBe(chain(parents, a).length);
      // The coordinator's child above `a` is the top of its chain.
      expect(tree.childTowards('', a)).toBe(chain(parents, a).at(-1));
    }
  });

  it('reads a RoundOpen without parents as one level at the round’s deadline', () => {
    const tree = RoundTree.of({
      assignments: assignments([
        ['s1', 'a'],
        ['s2', 'b'],
        ['s3', 'a'],
      ]),
      deadlineUnixMs: 777,
    });
    expect(tree.levels).toBe(1);
    expect(tree.childrenOf('')).toEqual(['a', 'b']);
    expect(tree.deadlineOf('b')).toBe(777);
    expect(tree.lastDeadlineUnixMs).toBe(777);
    expect(tree.covers('a', 's3')).toBe(true);
    expect(tree.covers('b', 's3')).toBe(false);
  });

  it('waits only for children with a site at or below them, and knows whose sites each carries', () => {
    const links: TreeLink[] = [
      { aggregator: 'top', parent: '', deadlineUnixMs: 300 },
      { aggregator: 'mid', parent: 'top', deadlineUnixMs: 200 },
      { aggregator: 'leaf', parent: 'mid', deadlineUnixMs: 100 },
      { aggregator: 'idle', parent: 'top', deadlineUnixMs: 100 },
    ];
    const tree = RoundTree.of({
      assignments: assignments([
        ['s1', 'leaf'],
        ['s2', 'top'],
      ]),
      parents: links,
      deadlineUnixMs: 100,
    });
    expect(tree.childrenOf('')).toEqual(['top']);
    expect(tree.childrenOf('top')).toEqual(['mid']); // `idle` has no site below it
    expect(tree.childTowards('top', 'leaf')).toBe('mid');
    expect(tree.childTowards('mid', 'top')).toBeUndefined();
    expect(tree.covers('top', 's1')).toBe(true);
    expect(tree.covers('mid', 's1')).toBe(true);
    expect(tree.covers('mid', 's2')).toBe(false);
  });

  it('refuses links that do not form a tree, naming the field', () => {
    const sites = assignments([['s1', 'a']]);
    const of = (parents: TreeLink[]) => () =>
      RoundTree.of({ assignments: sites, parents, deadlineUnixMs: 1 });
    const link = (aggregator: string, parent: string, deadlineUnixMs: number) => ({
      aggregator,
      parent,
      deadlineUnixMs,
    });
    expect(of([link('a', 'x', 1)])).toThrow(/open\.parents\[0\]\.parent/);
    expect(of([link('a', 'a', 1)])).toThrow(/open\.parents\[0\]\.parent/);
    expect(of([link('a', '', 1), link('a', '', 2)])).toThrow(/open\.parents\[1\]\.aggregator/);
    expect(of([link('a', 'b', 5), link('b', '', 5)])).toThrow(/open\.parents\[0\]\.deadlineUnixMs/);
    expect(of([link('a', 'b', 1), link('b', 'a', 2)])).toThrow(/open\.parents\[\d\]\.deadlineUnixMs/);
    expect(of([link('b', '', 1)])).toThrow(/open\.assignments\[0\]\.aggregator/);
    expect(errorCode(of([link('a', 'x', 1)]))).toBe('INVALID_ARGUMENT');
  });
});

describe('PartialIntake in a tree: a parent takes the partials of its children', () => {
  // top ← mid ← leaf (and the coordinator ← top): site-0 at leaf, site-1 at mid, site-2 at top.
  const LINKS: TreeLink[] = [
    { aggregator: 'top', parent: '', deadlineUnixMs: 3000 },
    { aggregator: 'mid', parent: 'top', deadlineUnixMs: 2000 },
    { aggregator: 'leaf', parent: 'mid', deadlineUnixMs: 1000 },
  ];
  const ASSIGNMENTS: Assignment[] = [
    { site: 'site-0', aggregator: 'leaf', examples: 10 },
    { site: 'site-1', aggregator: 'mid', examples: 20 },
    { site: 'site-2', aggregator: 'top', examples: 30 },
  ];
  const PARAMS = 3000;
  const context = roundContext(7);
  let fx: CodecFixture;
  const keys = new Map<string, SigningKeyPair>();
  let updates: EncodedUpdate[];
  let tree: RoundTree;

  beforeAll(async () => {
    fx = await codecFixture(3);
    for (const a of ['top', 'mid', 'leaf']) keys.set(a, generateSigningKeyPair('falcon-512'));
    updates = ASSIGNMENTS.map((a, i) =>
      encodeUpdate({
        update: randomUpdate(PARAMS, 11 + i, 0.03),
        residual: null,
        credentials: fx.site(i, context),
        context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: a.examples,
      }),
    );
    tree = RoundTree.of({ assignments: ASSIGNMENTS, parents: LINKS, deadlineUnixMs: 1000 });
  });

  const siteUpdate = (i: number) =>
    new BlockVerifier({
      context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
    }).verifyUpdate(updates[i]!);

  /** `signer`'s partial summing `sites` (indexes), forwarding `forwarded` (default: their manifests). */
  function partial(signer: string, sites: number[], forwarded = sites) {
    const aggregate = sumUpdates(fx.ctx, sites.map(siteUpdate));
    return encodeAggregate(aggregate, { signer, signing: keys.get(signer)! }, context, {
      crcChunkBytes: DEFAULT_CODEC_OPTIONS.crcChunkBytes,
      siteManifests: forwarded.map((i) => updates[i]!.manifest),
    });
  }

  function intake(parent: string, builder?: AggregateBuilder) {
    return new PartialIntake({
      ckks: fx.ctx,
      context,
      encoding: codecEncoding(fx.ctx, DEFAULT_CODEC_OPTIONS),
      assignments: ASSIGNMENTS,
      totalParams: PARAMS,
      keys: (id) => keys.get(id) ?? fx.signers.get(id),
      allowedAlgorithms: ['falcon-512'],
      tree,
      parent,
      ...(builder === undefined ? {} : { builder }),
    });
  }

  function submit(at: PartialIntake, sender: string, p: ReturnType<typeof partial>): string {
    for (const b of p.blocks) at.accept(sender, b);
    return blockReason(() => at.accept(sender, p.manifest));
  }

  it('a middle aggregator adds its child’s partial to its own sum and can forward every manifest', () => {
    const builder = new AggregateBuilder(fx.ctx);
    try {
      // mid's own site first, as the aggregator's RoundCollector does.
      builder.add(siteUpdate(1));
      const atMid = intake('mid', builder);
      expect([...atMid.aggregators]).toEqual(['leaf']);
      expect(atMid.settled).toBe(false);
      expect(submit(atMid, 'leaf', partial('leaf', [0]))).toBe('accepted');
      expect(atMid.settled).toBe(true);
      const [accepted] = atMid.accepted;
      expect(accepted!.sites.map((c) => c.site)).toEqual(['site-0']);
      expect(Buffer.from(accepted!.siteManifests[0]!).equals(Buffer.from(updates[0]!.manifest))).toBe(true);
      expect(builder.contributors).toBe(2);
      expect(builder.has('site-0') && builder.has('site-1')).toBe(true);
    } finally {
      builder.dispose();
    }
  });

  it('the coordinator takes the top partial listing sites two levels down, and nothing from below the top', () => {
    const atRoot = intake('');
    try {
      expect([...atRoot.aggregators]).toEqual(['top']);
      // mid is not the coordinator's child: its partial is refused before any signature work.
      expect(blockReason(() => atRoot.accept('mid', partial('mid', [0, 1]).manifest))).toBe('WRONG_SIGNER');
      expect(submit(atRoot, 'top', partial('top', [0, 1, 2]))).toBe('accepted');
      expect(atRoot.builder.contributors).toBe(3);
    } finally {
      atRoot.builder.dispose();
    }
  });

  it('refuses a child listing a site outside its subtree, or forwarding a manifest the site did not sign', () => {
    const atMid = intake('mid');
    try {
      // site-2 is top's own site, not below leaf.
      expect(submit(atMid, 'leaf', partial('leaf', [0, 2]))).toBe('WRONG_CONTEXT');
      expect(atMid.failed.get('leaf')).toMatch(/^WRONG_CONTEXT/);
      expect(atMid.settled).toBe(true); // a refused child is not waited for
    } finally {
      atMid.builder.dispose();
    }
    const atTop = intake('top');
    try {
      // mid lists site-0 and site-1 but forwards each under the other's name.
      expect(submit(atTop, 'mid', partial('mid', [0, 1], [1, 0]))).toBe('WRONG_SIGNER');
      expect(atTop.builder.contributors).toBe(0);
    } finally {
      atTop.builder.dispose();
    }
    // A partial whose own signature fails (signed with leaf's key under mid's name) is refused too.
    const atTop2 = intake('top');
    try {
      const p = partial('mid', [0, 1]);
      keys.set('mid-real', keys.get('mid')!);
      keys.set('mid', keys.get('leaf')!);
      try {
        expect(blockReason(() => atTop2.accept('mid', p.blocks[0]!))).toBe('WRONG_SIGNER');
      } finally {
        keys.set('mid', keys.get('mid-real')!);
      }
    } finally {
      atTop2.builder.dispose();
    }
  });
});
