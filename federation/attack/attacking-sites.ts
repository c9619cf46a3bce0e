import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { RANDOM_STREAMS, RandomStream } from '../partition/random-stream.ts';
import { shuffledRange } from '../partition/shuffle.ts';

const UINT32_MAX = 0xffff_ffff;

/**
 * The sites that attack: exactly round(fraction·siteCount) of the site indices 0 … siteCount − 1
 * (halves round up), every subset of that size equally likely. The first sites of a Fisher–Yates
 * shuffle on the stream {@link RANDOM_STREAMS}.attackSites, so the choice is a pure function of
 * (siteCount, fraction, seed) and independent of the data partition drawn from the same seed.
 *
 * @param siteCount - integer ≥ 1
 * @param fraction - share of attackers, in [0, 1]
 * @param seed - uint32 experiment seed
 * @returns the attacking site indices, iterated in ascending order
 */
export function attackingSites(siteCount: number, fraction: number, seed: number): ReadonlySet<number> {
  assertInteger('siteCount', siteCount, 1, UINT32_MAX);
  if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1)) {
    throw new InvalidArgumentError(`fraction must be in [0, 1], got ${String(fraction)}`, {
      details: { name: 'fraction', value: String(fraction) },
    });
  }
  assertInteger('seed', seed, 0, UINT32_MAX);
  const count = Math.round(fraction * siteCount);
  const order = shuffledRange(siteCount, new RandomStream(seed, RANDOM_STREAMS.attackSites));
  return new Set(order.subarray(0, count).sort());
}
