import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { checkLabels, checkSitesAndSeed, sortParts } from './check-args.ts';
import { RANDOM_STREAMS, RandomStream } from './random-stream.ts';
import { shuffledRange } from './shuffle.ts';

/**
 * The pathological non-IID partition of the FedAvg paper (McMahan et al. 2017, §3): sort the rows
 * by label (stable: ties keep row order), cut the sorted list into `sites · shardsPerSite` shards
 * of equal size (shard k is sorted positions ⌊k·n/S⌋ … ⌊(k+1)·n/S⌋ − 1, so sizes differ by at most
 * 1 when S does not divide n), shuffle the shard numbers (stream
 * {@link RANDOM_STREAMS}.partitionShards) and give site s shards
 * `s·shardsPerSite … (s+1)·shardsPerSite − 1` of that order. The paper's MNIST setting is 100 sites
 * × 2 shards of 300 images.
 *
 * A shard straddles two labels where a label's row count is not a multiple of the shard size, so
 * a site sees at most `2 · shardsPerSite` labels and usually `shardsPerSite` or fewer.
 *
 * @param labels - one label per row, integers in [0, 256)
 * @param sites - integer ≥ 1
 * @param shardsPerSite - integer ≥ 1; `sites · shardsPerSite` must not exceed the row count
 * @param seed - uint32
 * @returns one array of row indices per site, each sorted ascending, covering every row once
 */
export function partitionShards(
  labels: ArrayLike<number>,
  sites: number,
  shardsPerSite: number,
  seed: number,
): Uint32Array[] {
  checkLabels(labels, 256);
  checkSitesAndSeed(labels.length, sites, seed);
  assertInteger('shardsPerSite', shardsPerSite, 1, 0xffff_ffff);
  const n = labels.length;
  const shardCount = sites * shardsPerSite;
  if (shardCount > n) {
    throw new InvalidArgumentError(
      `${sites} sites × ${shardsPerSite} shards = ${shardCount} shards, more than the ${n} rows`,
      { details: { sites, shardsPerSite, count: n } },
    );
  }
  const sorted = sortByLabel(labels);
  const shardOrder = shuffledRange(shardCount, new RandomStream(seed, RANDOM_STREAMS.partitionShards));
  const parts: Uint32Array[] = [];
  for (let s = 0; s < sites; s++) {
    const pieces: Uint32Array[] = [];
    let size = 0;
    for (let j = 0; j < shardsPerSite; j++) {
      const k = shardOrder[s * shardsPerSite + j]!;
      const piece = sorted.subarray(Math.floor((k * n) / shardCount), Math.floor(((k + 1) * n) / shardCount));
      pieces.push(piece);
      size += piece.length;
    }
    const part = new Uint32Array(size);
    let at = 0;
    for (const piece of pieces) {
      part.set(piece, at);
      at += piece.length;
    }
    parts.push(part);
  }
  return sortParts(parts);
}

/** Row indices in stable label order (counting sort). */
function sortByLabel(labels: ArrayLike<number>): Uint32Array {
  const start = new Uint32Array(257);
  for (let i = 0; i < labels.length; i++) start[labels[i]! + 1]!++;
  for (let y = 1; y <= 256; y++) start[y] = start[y]! + start[y - 1]!;
  const out = new Uint32Array(labels.length);
  for (let i = 0; i < labels.length; i++) out[start[labels[i]!]!++] = i;
  return out;
}
