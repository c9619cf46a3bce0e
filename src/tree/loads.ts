/**
 * Number of keys per node in an assignment (key → node id), as node id → count. Only nodes that
 * hold at least one key appear; pass `nodeIds` to list every node, with 0 for an empty one.
 * Accepts a `Map` (from `assignBounded`) or an array of node ids (from `assignShards`).
 */
export function loads(
  assignment: ReadonlyMap<string, string> | readonly string[],
  nodeIds: readonly string[] = [],
): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of nodeIds) counts.set(id, 0);
  for (const id of assignment.values()) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}
