import { RandomStream } from '../partition/random-stream.ts';

/**
 * A source of uniform doubles in the open interval (0, 1) with 53 random bits. DP noise on a site
 * draws from {@link cryptoUniformSource}; simulations that must repeat bit for bit draw from
 * {@link seededUniformSource}, which is not secret and gives no privacy.
 */
export type UniformSource = () => number;

const TWO_POW_26 = 2 ** 26;
const TWO_POW_53 = 2 ** 53;
const BUFFER_WORDS = 8192;

/** Uniforms from the platform CSPRNG (`crypto.getRandomValues`), read 32 KiB at a time. */
export function cryptoUniformSource(): UniformSource {
  const words = new Uint32Array(BUFFER_WORDS);
  let next = BUFFER_WORDS;
  return () => {
    if (next + 2 > BUFFER_WORDS) {
      crypto.getRandomValues(words);
      next = 0;
    }
    const a = words[next]! >>> 5;
    const b = words[next + 1]! >>> 6;
    next += 2;
    return (a * TWO_POW_26 + b + 0.5) / TWO_POW_53;
  };
}

/** Reproducible uniforms from the counter RNG: (seed, stream) fixes every draw. Not secret. */
export function seededUniformSource(seed: number, stream: number): UniformSource {
  const random = new RandomStream(seed, stream);
  return () => random.nextOpenUniform();
}
