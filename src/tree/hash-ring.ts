import { InvalidArgumentError } from '../errors/index.ts';
import { ringHash, vnodeLabel } from './ring-hash.ts';
import { TreeError } from './tree-error.ts';

/** A member of the ring (an aggregator, or an aggregation subtree for shards). */
export interface RingNode {
  /** Unique, non-empty id; hashed as `<id>#<i>` for its virtual nodes. */
  readonly id: string;
  /** Relative capacity weight, finite and > 0. Virtual nodes and bounded caps scale with it. */
  readonly capacity: number;
}

export interface RingOptions {
  /**
   * Virtual nodes per unit of capacity (default 64). A node gets
   * `max(1, round(vnodesPerUnit · capacity))` virtual nodes.
   */
  readonly vnodesPerUnit?: number;
}

/**
 * A consistent-hash ring of virtual nodes.
 *
 * Invariants: immutable once built; `positions` is strictly sorted ascending (no two virtual
 * nodes share a position — on a 64-bit collision the later one in (position, node, index)
 * order is dropped, which never happens in practice but keeps the ring well-defined);
 * `owners[i]` is the index in `nodes` of the node owning `positions[i]`; every node owns at
 * least one position. Everything is a pure function of `(nodes, vnodesPerUnit)`: node order in
 * the input does not matter.
 */
export interface HashRing {
  /** The members, sorted by id, frozen. */
  readonly nodes: readonly RingNode[];
  /** Sum of all capacities. */
  readonly totalCapacity: number;
  /** Ring positions of the virtual nodes, strictly ascending. */
  readonly positions: readonly bigint[];
  /** `owners[i]` = index into `nodes` of the owner of `positions[i]`. */
  readonly owners: readonly number[];
  /** Plain consistent hashing (no load bound): the owner of the first virtual node clockwise from `key`. */
  lookup(key: string): string;
  /** Index of the first virtual node at or clockwise after `position` (wraps to 0). */
  firstAtOrAfter(position: bigint): number;
}

/** Upper bound on virtual nodes in one ring, so a typo in a capacity cannot exhaust memory. */
export const MAX_VNODES = 1_000_000;

/**
 * Builds a ring. Refuses an empty node list (`NO_NODES`), duplicate ids (`DUPLICATE_NODE`), an
 * empty id, a capacity that is not finite and > 0, and a `vnodesPerUnit` that is not a positive
 * integer (`INVALID_ARGUMENT`, naming the argument).
 */
export function createRing(nodes: readonly RingNode[], options: RingOptions = {}): HashRing {
  const vnodesPerUnit = options.vnodesPerUnit ?? 64;
  if (!Number.isInteger(vnodesPerUnit) || vnodesPerUnit < 1) {
    throw new InvalidArgumentError(
      `options.vnodesPerUnit must be a positive integer, got ${String(vnodesPerUnit)}`,
      { details: { name: 'options.vnodesPerUnit', value: String(vnodesPerUnit) } },
    );
  }
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new TreeError('NO_NODES', 'nodes must hold at least one node, got none');
  }
  const seen = new Set<string>();
  nodes.forEach((node, i) => {
    if (typeof node.id !== 'string' || node.id.length === 0) {
      throw new InvalidArgumentError(`nodes[${i}].id must be a non-empty string`, {
        details: { name: `nodes[${i}].id`, value: String(node.id) },
      });
    }
    if (typeof node.capacity !== 'number' || !Number.isFinite(node.capacity) || node.capacity <= 0) {
      throw new InvalidArgumentError(
        `nodes[${i}].capacity must be a finite number > 0, got ${String(node.capacity)} (node "${node.id}")`,
        { details: { name: `nodes[${i}].capacity`, value: String(node.capacity), id: node.id } },
      );
    }
    if (seen.has(node.id)) {
      throw new TreeError('DUPLICATE_NODE', `nodes[${i}].id "${node.id}" appears more than once`, {
        details: { name: `nodes[${i}].id`, id: node.id },
      });
    }
    seen.add(node.id);
  });

  const sorted = Object.freeze(
    [...nodes]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((n) => Object.freeze({ id: n.id, capacity: n.capacity })),
  );
  const counts = sorted.map((n) => Math.max(1, Math.round(vnodesPerUnit * n.capacity)));
  const total = counts.reduce((s, c) => s + c, 0);
  if (total > MAX_VNODES) {
    throw new InvalidArgumentError(
      `nodes need ${total} virtual nodes at options.vnodesPerUnit = ${vnodesPerUnit}; at most ${MAX_VNODES}`,
      { details: { name: 'options.vnodesPerUnit', value: vnodesPerUnit, total } },
    );
  }

  const entries: { pos: bigint; owner: number; index: number }[] = [];
  sorted.forEach((node, owner) => {
    for (let index = 0; index < counts[owner]!; index++) {
      entries.push({ pos: ringHash(vnodeLabel(node.id, index)), owner, index });
    }
  });
  entries.sort((a, b) => (a.pos < b.pos ? -1 : a.pos > b.pos ? 1 : a.owner - b.owner || a.index - b.index));
  const positions: bigint[] = [];
  const owners: number[] = [];
  for (const e of entries) {
    if (positions.length > 0 && positions[positions.length - 1] === e.pos) continue;
    positions.push(e.pos);
    owners.push(e.owner);
  }
  Object.freeze(positions);
  Object.freeze(owners);

  const firstAtOrAfter = (position: bigint): number => {
    let lo = 0;
    let hi = positions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (positions[mid]! < position) lo = mid + 1;
      else hi = mid;
    }
    return lo === positions.length ? 0 : lo;
  };

  return Object.freeze({
    nodes: sorted,
    totalCapacity: sorted.reduce((s, n) => s + n.capacity, 0),
    positions,
    owners,
    firstAtOrAfter,
    lookup(key: string): string {
      if (typeof key !== 'string') {
        throw new InvalidArgumentError(`key must be a string, got ${typeof key}`, {
          details: { name: 'key' },
        });
      }
      return sorted[owners[firstAtOrAfter(ringHash(key))]!]!.id;
    },
  });
}
