import { assertInteger } from '../errors/index.ts';
import { assignBounded } from './assign-bounded.ts';
import type { HashRing } from './hash-ring.ts';

/** Key of parameter shard `index` on the ring: `shard-<index>`. */
export function shardKey(index: number): string {
  return `shard-${index}`;
}

/**
 * Assigns parameter shards `0 … shardCount−1` (keys `shard-<i>`) to ring nodes with bounded
 * loads. Returns an array indexed by shard id holding the node id.
 *
 * Invariants: those of {@link assignBounded}; `result.length === shardCount`.
 * Refuses a `shardCount` that is not an integer in [0, 2³²−1] (shard ids are uint32 on the wire).
 */
export function assignShards(ring: HashRing, shardCount: number, epsilon: number): string[] {
  assertInteger('shardCount', shardCount, 0, 0xffff_ffff);
  const keys = Array.from({ length: shardCount }, (_, i) => shardKey(i));
  const assignment = assignBounded(ring, keys, epsilon);
  return keys.map((k) => assignment.get(k)!);
}
