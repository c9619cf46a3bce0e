import type { RandomStream } from './random-stream.ts';

/**
 * Fisher–Yates shuffle in place, drawing `random.nextInt(i + 1)` for i = n − 1 down to 1.
 * Returns `values`.
 */
export function shuffleInPlace<T extends { [index: number]: number; readonly length: number }>(
  values: T,
  random: RandomStream,
): T {
  for (let i = values.length - 1; i > 0; i--) {
    const j = random.nextInt(i + 1);
    const t = values[i]!;
    values[i] = values[j]!;
    values[j] = t;
  }
  return values;
}

/** `[0, 1, …, count − 1]` shuffled by {@link shuffleInPlace}. */
export function shuffledRange(count: number, random: RandomStream): Uint32Array {
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) out[i] = i;
  return shuffleInPlace(out, random);
}
