export { apportion } from './apportion.ts';
export { logGamma, sampleDirichlet } from './dirichlet.ts';
export { type ColumnPartition, partitionByColumn } from './partition-by-column.ts';
export { DIRICHLET_MAX_ATTEMPTS, partitionDirichlet } from './partition-dirichlet.ts';
export { partitionIid } from './partition-iid.ts';
export { partitionShards } from './partition-shards.ts';
export { partitionStats } from './partition-stats.ts';
export { RANDOM_STREAMS, RandomStream } from './random-stream.ts';
export { shuffledRange, shuffleInPlace } from './shuffle.ts';
