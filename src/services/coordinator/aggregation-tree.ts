import { assertInteger, InvalidArgumentError } from '../../errors/index.ts';
import type { TreeLink } from '../../protocol/index.ts';
import { ringHash } from '../../tree/index.ts';

/** An aggregator a round uses and its capacity weight (`members.aggregators[].capacity`). */
export interface TreeNode {
  readonly id: string;
  readonly capacity: number;
}

/** The fan-in limits of the tree (`round.tree`). */
export interface TreeFanIn {
  /** Most aggregators that send their partial to the coordinator. */
  readonly rootFanIn: number;
  /** Most child aggregators one aggregator sums. */
  readonly fanIn: number;
}

/** A point in [0, 1) read from 53 bits of `ringHash(text)`, never 0. */
function unit(text: string): number {
  return (Number(ringHash(text) >> 11n) + 0.5) / 2 ** 53;
}

/**
 * Each aggregator's parent in the round's aggregation tree (`''`: the coordinator), by weighted
 * rendezvous hashing (a form of consistent hashing: one aggregator more or less moves few others):
 *
 * - with at most `rootFanIn` aggregators, one level: every parent is `''`;
 * - otherwise the aggregators are ranked by their weighted score (`capacity / −ln u(id)`, higher
 *   capacity ranks higher), the first `rootFanIn` send to the coordinator, the next up to
 *   `rootFanIn · fanIn` form the second level, and so on, each level as large as its parents allow;
 * - each aggregator of a level picks, in rank order, the parent of the level above with the highest
 *   `u(parent/child)` that still has room, room being the level's children spread evenly
 *   (⌈children / parents⌉ ≤ `fanIn`, loads differing by at most one).
 *
 * A pure function of the ids, capacities and limits: every run and host builds the same tree.
 * The result has an entry for every node.
 */
export function buildAggregationTree(nodes: readonly TreeNode[], limits: TreeFanIn): Map<string, string> {
  assertInteger('limits.rootFanIn', limits.rootFanIn, 1, 65_535);
  assertInteger('limits.fanIn', limits.fanIn, 1, 65_535);
  const ids = new Set<string>();
  nodes.forEach((n, i) => {
    if (typeof n.id !== 'string' || n.id === '' || ids.has(n.id)) {
      throw new InvalidArgumentError(`nodes[${i}].id must be a unique, non-empty id`, {
        details: { name: `nodes[${i}].id` },
      });
    }
    if (!(Number.isFinite(n.capacity) && n.capacity > 0)) {
      throw new InvalidArgumentError(`nodes[${i}].capacity must be > 0`, {
        details: { name: `nodes[${i}].capacity` },
      });
    }
    ids.add(n.id);
  });
  const parents = new Map<string, string>();
  const score = (n: TreeNode) => n.capacity / -Math.log(unit(`cohort/tree/${n.id}`));
  const ranked = [...nodes]
    .map((n) => ({ id: n.id, score: score(n) }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((n) => n.id);
  let above = ranked.slice(0, limits.rootFanIn);
  for (const id of above) parents.set(id, '');
  let rest = ranked.slice(above.length);
  while (rest.length > 0) {
    const level = rest.slice(0, above.length * limits.fanIn);
    rest = rest.slice(level.length);
    // Even loads: `full` parents take `room` children, the others `room − 1`.
    const room = Math.ceil(level.length / above.length);
    const full = level.length - (room - 1) * above.length;
    let atRoom = 0;
    const load = new Map(above.map((p) => [p, 0]));
    for (const child of level) {
      let best: string | undefined;
      let bestScore = -1;
      for (const p of above) {
        const l = load.get(p)!;
        if (l >= room || (l === room - 1 && atRoom >= full)) continue;
        const s = unit(`cohort/tree/${p}/${child}`);
        if (s > bestScore) {
          best = p;
          bestScore = s;
        }
      }
      // The loads allowed add up to level.length exactly, so some parent always has room.
      parents.set(child, best!);
      load.set(best!, load.get(best!)! + 1);
      if (load.get(best!) === room) atRoom++;
    }
    above = level;
  }
  return parents;
}

/**
 * The RoundOpen `parents` of a tree built by {@link buildAggregationTree}: empty for one level;
 * else every aggregator, sorted by id, with its parent and its deadline: `deadlineUnixMs` for an
 * aggregator with no child aggregator, and `levelWaitMs` more than its latest child's above it, so
 * each parent waits for a straggling child's partial no longer than that and a child is never later
 * than its parent.
 */
export function treeLinks(
  parents: ReadonlyMap<string, string>,
  deadlineUnixMs: number,
  levelWaitMs: number,
): TreeLink[] {
  assertInteger('deadlineUnixMs', deadlineUnixMs, 0, Number.MAX_SAFE_INTEGER);
  assertInteger('levelWaitMs', levelWaitMs, 1, 3_600_000);
  for (const [a, p] of parents) {
    if (p !== '' && !parents.has(p)) {
      throw new InvalidArgumentError(`parents: ${a}'s parent ${p} is not in the tree`, {
        details: { name: 'parents' },
      });
    }
  }
  if ([...parents.values()].every((p) => p === '')) return [];
  const height = new Map<string, number>();
  // A child's height is final before its parent's: walk up from every aggregator.
  for (const start of parents.keys()) {
    let h = 0;
    for (let a = start; a !== ''; a = parents.get(a)!) {
      if ((height.get(a) ?? -1) >= h) break;
      height.set(a, h);
      h++;
      if (h > parents.size)
        throw new InvalidArgumentError('parents form a cycle', { details: { name: 'parents' } });
    }
  }
  return [...parents.keys()].sort().map((aggregator) => ({
    aggregator,
    parent: parents.get(aggregator)!,
    deadlineUnixMs: deadlineUnixMs + height.get(aggregator)! * levelWaitMs,
  }));
}
