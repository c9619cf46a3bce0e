export { assignBounded, boundedCaps } from './assign-bounded.ts';
export { assignShards, shardKey } from './assign-shards.ts';
export { createRing, type HashRing, MAX_VNODES, type RingNode, type RingOptions } from './hash-ring.ts';
export { loads } from './loads.ts';
export { ringHash, vnodeLabel } from './ring-hash.ts';
export { TREE_ERROR_CODES, TreeError, type TreeErrorCode } from './tree-error.ts';
