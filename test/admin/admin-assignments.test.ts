// The round detail's assignments (GET /v1/rounds/{round}): each site's aggregator and, in an
// aggregation tree deeper than one level, where that aggregator sends its partial (RoundOpen's
// `parents`). The route itself, at one level, is covered in admin-routes.test.ts.
import { describe, expect, it } from 'vitest';
import { ROUND_DETAIL } from '../../src/admin/schemas.ts';
import { assignmentsJson } from '../../src/admin/views.ts';
import { type ControlBodies, RoundTree } from '../../src/protocol/index.ts';

const DEADLINE = 1_700_000_000_000;

function roundOpen(parents?: ControlBodies['round-open']['parents']): ControlBodies['round-open'] {
  return {
    federation: 'adm',
    round: 3,
    version: 2,
    baseCommit: new Uint8Array(32),
    assignments: [
      { site: 'site-1', aggregator: 'agg-1', examples: 100 },
      { site: 'site-2', aggregator: 'agg-2', examples: 200 },
      { site: 'site-3', aggregator: 'agg-3', examples: 300 },
      { site: 'site-4', aggregator: 'agg-3', examples: 400 },
    ],
    bits: 8,
    clip: 1,
    maxContributors: 16,
    crcChunkBytes: 4096,
    deadlineUnixMs: DEADLINE,
    totalExamples: 1000,
    totalParams: 7850,
    attempt: new Uint8Array(16).fill(3),
    ...(parents === undefined ? {} : { parents }),
  };
}

describe('admin round assignments', () => {
  it("names each aggregator's parent from RoundOpen's parents", () => {
    // agg-3 sums agg-2's partial; agg-1 and agg-3 send to the coordinator.
    const open = roundOpen([
      { aggregator: 'agg-1', parent: '', deadlineUnixMs: DEADLINE },
      { aggregator: 'agg-2', parent: 'agg-3', deadlineUnixMs: DEADLINE },
      { aggregator: 'agg-3', parent: '', deadlineUnixMs: DEADLINE + 2000 },
    ]);
    const tree = RoundTree.of(open); // the links form a tree, as a logged RoundOpen's must
    const view = assignmentsJson(open);
    expect(view.map((a) => [a.site, a.aggregator, a.aggregatorParent])).toEqual([
      ['site-1', 'agg-1', ''],
      ['site-2', 'agg-2', 'agg-3'],
      ['site-3', 'agg-3', ''],
      ['site-4', 'agg-3', ''],
    ]);
    for (const a of view) expect(a.aggregatorParent).toBe(tree.parentOf(a.aggregator));
    expect(view.map((a) => a.examples)).toEqual([100, 200, 300, 400]);
  });

  it("at one level every aggregator's parent is the coordinator ('')", () => {
    expect(assignmentsJson(roundOpen()).map((a) => a.aggregatorParent)).toEqual(['', '', '', '']);
  });

  it('answers exactly the fields its closed schema lists', () => {
    const items = ROUND_DETAIL.properties.assignments.items;
    for (const a of assignmentsJson(roundOpen())) {
      expect(Object.keys(a).sort()).toEqual([...items.required].sort());
      expect(Object.keys(a).sort()).toEqual(Object.keys(items.properties).sort());
    }
  });
});
