import { assertInteger } from '../../src/errors/index.ts';
import { checkSitesAndSeed, sortParts } from './check-args.ts';
import { RANDOM_STREAMS, RandomStream } from './random-stream.ts';
import { shuffledRange } from './shuffle.ts';

/**
 * IID partition: shuffles `0 … count − 1` (Fisher–Yates on stream
 * {@link RANDOM_STREAMS}.partitionIid) and cuts it into `sites` contiguous chunks whose sizes
 * differ by at most 1 (the first `count mod sites` sites get the extra row).
 *
 * @param count - rows, integer ≥ sites
 * @param sites - integer ≥ 1
 * @param seed - uint32
 * @returns one array of row indices per site, each sorted ascending; together they cover every
 *   row exactly once
 */
export function partitionIid(count: number, sites: number, seed: number): Uint32Array[] {
  assertInteger('count', count, 0, 0xffff_ffff);
  checkSitesAndSeed(count, sites, seed);
  const order = shuffledRange(count, new RandomStream(seed, RANDOM_STREAMS.partitionIid));
  const base = Math.floor(count / sites);
  const extra = count % sites;
  const parts: Uint32Array[] = [];
  let start = 0;
  for (let s = 0; s < sites; s++) {
    const size = base + (s < extra ? 1 : 0);
    parts.push(order.slice(start, start + size));
    start += size;
  }
  return sortParts(parts);
}
