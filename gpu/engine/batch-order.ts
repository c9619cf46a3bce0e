import { counterRandom } from '../../federation/index.ts';

/**
 * The order rows are visited in epoch `epoch`: a Fisher–Yates shuffle driven by the counter RNG
 * keyed by (seed, epoch). Both engines use it, so they see the same mini-batches.
 *
 * @returns a permutation of [0, count).
 */
export function batchOrder(count: number, seed: number, epoch: number): Uint32Array {
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  for (let i = count - 1; i > 0; i--) {
    // Multiply-shift maps a uint32 draw to [0, i] with negligible bias for data-set sizes.
    const j = Math.floor((counterRandom(seed >>> 0, epoch >>> 0, i) / 2 ** 32) * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  return order;
}
