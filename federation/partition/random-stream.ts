import { assertInteger } from '../../src/errors/index.ts';
import { counterRandom } from '../quantize/counter-random.ts';

const UINT32_MAX = 0xffff_ffff;
const TWO_POW_26 = 2 ** 26;
const TWO_POW_53 = 2 ** 53;

/**
 * Stream tags (`key1` of {@link counterRandom}) of the data and partition functions, so one seed
 * gives independent streams to each use. Never renumbered: a change would change every split.
 */
export const RANDOM_STREAMS = {
  partitionIid: 0x5041_0001,
  partitionDirichlet: 0x5041_0002,
  partitionShards: 0x5041_0003,
  trainTestSplit: 0x5041_0010,
  attackSites: 0x5041_0020,
} as const;

/**
 * A sequential reader of the counter RNG: draw `i` is `counterRandom(seed, stream, i)`, `i` counting
 * from 0. Everything it derives (integers, uniforms, normals) is a pure function of
 * (seed, stream) and the order of calls, so results are identical on every platform.
 */
export class RandomStream {
  readonly seed: number;
  readonly stream: number;
  #counter = 0;

  /**
   * @param seed - uint32 seed (`key0`)
   * @param stream - uint32 stream tag (`key1`), e.g. one of {@link RANDOM_STREAMS}
   */
  constructor(seed: number, stream: number) {
    assertInteger('seed', seed, 0, UINT32_MAX);
    assertInteger('stream', stream, 0, UINT32_MAX);
    this.seed = seed;
    this.stream = stream;
  }

  /** Number of u32 draws taken so far. */
  get drawn(): number {
    return this.#counter;
  }

  /** Next u32 draw. Throws once the 2^32 counters of the stream are used up. */
  nextU32(): number {
    const c = this.#counter;
    if (c > UINT32_MAX) throw new RangeError('RandomStream exhausted its 2^32 counters');
    this.#counter = c + 1;
    return counterRandom(this.seed, this.stream, c);
  }

  /**
   * Unbiased integer in [0, n) by rejection: draws r until `r < n·⌊2^32 / n⌋`, returns `r mod n`.
   * @param n - integer in [1, 2^32]
   */
  nextInt(n: number): number {
    assertInteger('n', n, 1, UINT32_MAX + 1);
    const limit = n * Math.floor((UINT32_MAX + 1) / n);
    for (;;) {
      const r = this.nextU32();
      if (r < limit) return r % n;
    }
  }

  /**
   * Uniform double in the open interval (0, 1) from two draws a, b:
   * `((a >>> 5)·2^26 + (b >>> 6) + 0.5) / 2^53`. Never 0 or 1, so `log` of it is finite.
   */
  nextOpenUniform(): number {
    const a = this.nextU32() >>> 5;
    const b = this.nextU32() >>> 6;
    return (a * TWO_POW_26 + b + 0.5) / TWO_POW_53;
  }

  /** Standard normal by Box–Muller, `√(−2 ln u1)·cos(2π u2)` (the sine half is discarded). */
  nextNormal(): number {
    const u1 = this.nextOpenUniform();
    const u2 = this.nextOpenUniform();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }
}
