import { CohortError, InvalidArgumentError } from '../errors/index.ts';
import type { HashRing } from './hash-ring.ts';
import { ringHash } from './ring-hash.ts';

/**
 * Load cap of every node for `keyCount` keys: `⌈(1+ε) · capacity/Σcapacity · keyCount⌉`, by node id.
 * Every cap is ≥ 1 when `keyCount ≥ 1`, and the caps sum to more than `keyCount`, so a bounded
 * assignment always finds room.
 */
export function boundedCaps(ring: HashRing, keyCount: number, epsilon: number): Map<string, number> {
  assertEpsilon(epsilon);
  const caps = new Map<string, number>();
  for (const node of ring.nodes) {
    caps.set(node.id, capFor(node.capacity / ring.totalCapacity, keyCount, epsilon));
  }
  return caps;
}

/**
 * Consistent hashing with bounded loads and capacity weights (Mirrokni, Thorup and
 * Zadimoghaddam, 2018). Keys are placed in ascending order of their ring hash (ties by key), each
 * on the first virtual node clockwise from its position whose node is still below its cap
 * (see {@link boundedCaps}).
 *
 * Invariants: a pure function of `(ring, set of keys, epsilon)` — the input order of `keys` does
 * not matter; every key is assigned; no node holds more than its cap; with ε large enough that
 * no cap binds, the result equals `ring.lookup` for every key.
 *
 * Refuses ε that is not finite and > 0, a non-string key and a duplicate key (`INVALID_ARGUMENT`).
 */
export function assignBounded(ring: HashRing, keys: readonly string[], epsilon: number): Map<string, string> {
  assertEpsilon(epsilon);
  const seen = new Set<string>();
  const hashed = keys.map((key, i) => {
    if (typeof key !== 'string') {
      throw new InvalidArgumentError(`keys[${i}] must be a string, got ${typeof key}`, {
        details: { name: `keys[${i}]` },
      });
    }
    if (seen.has(key)) {
      throw new InvalidArgumentError(`keys[${i}] "${key}" appears more than once`, {
        details: { name: `keys[${i}]`, key },
      });
    }
    seen.add(key);
    return { key, hash: ringHash(key) };
  });
  hashed.sort((a, b) =>
    a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
  );

  const { nodes, owners, totalCapacity } = ring;
  const caps = nodes.map((n) => capFor(n.capacity / totalCapacity, keys.length, epsilon));
  const load = new Array<number>(nodes.length).fill(0);
  const size = owners.length;
  const result = new Map<string, string>();
  for (const { key, hash } of hashed) {
    const start = ring.firstAtOrAfter(hash);
    let placed = false;
    for (let step = 0; step < size; step++) {
      const owner = owners[(start + step) % size]!;
      if (load[owner]! < caps[owner]!) {
        load[owner]!++;
        result.set(key, nodes[owner]!.id);
        placed = true;
        break;
      }
    }
    // Unreachable: Σcaps ≥ (1+ε)·keys > keys. Kept as a loud guard on that invariant.
    if (!placed) {
      throw new CohortError('TREE_INVARIANT', `assignBounded: no node below its cap for key "${key}"`, {
        details: { key, keyCount: keys.length, epsilon },
      });
    }
  }
  return result;
}

/**
 * `⌈(1+ε)·share·keyCount⌉`, where a product within 1e-9 (relative) of an integer counts as that
 * integer: `1.1 · (1/8) · 800` evaluates to 110.00000000000001 and must cap at 110, not 111.
 * The snap only ever lowers a cap by the one unit a rounding error added, and Σcaps ≥ keyCount
 * still holds for every ε > 0 (Σcaps > (1+ε)·keyCount·(1−1e-9) > keyCount − 1).
 */
function capFor(share: number, keyCount: number, epsilon: number): number {
  const exact = (1 + epsilon) * share * keyCount;
  const nearest = Math.round(exact);
  return Math.abs(exact - nearest) <= 1e-9 * Math.max(1, exact) ? nearest : Math.ceil(exact);
}

function assertEpsilon(epsilon: number): void {
  if (typeof epsilon !== 'number' || !Number.isFinite(epsilon) || epsilon <= 0) {
    throw new InvalidArgumentError(`epsilon must be a finite number > 0, got ${String(epsilon)}`, {
      details: { name: 'epsilon', value: String(epsilon) },
    });
  }
}
