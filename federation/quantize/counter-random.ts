import { assertInteger } from '../../src/errors/index.ts';

const UINT32_MAX = 0xffff_ffff;

/** 2^-24: scales a 24-bit integer into [0, 1); every product is exact in float32. */
export const UNIFORM_SCALE = 2 ** -24;

/**
 * Chris Wellons' "lowbias32" integer hash finalizer (hash-prospector), a bijection on u32:
 *
 * ```
 * x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16;   // u32, mod 2^32
 * ```
 *
 * `x` is read as ToUint32(x) (its value mod 2^32); the result is an integer in [0, 2^32).
 * Only u32 xor, logical right shift and wrap-around multiply, so WGSL reproduces it bit for bit.
 */
export function lowbias32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Per-key constant of {@link counterRandom}: `k = lowbias32(key0 ^ lowbias32(key1))`, an integer in
 * [0, 2^32). Hoisted out of per-element loops (a GPU kernel may receive it as a uniform).
 */
export function counterKey(key0: number, key1: number): number {
  return lowbias32(key0 ^ lowbias32(key1));
}

/**
 * Keyed counter-based random number generator: element `counter` of the stream named by the
 * 64-bit key (`key0`, `key1`), with no state. Exact formula (all values u32, `+` mod 2^32):
 *
 * ```
 * k = lowbias32(key0 ^ lowbias32(key1))
 * r = lowbias32(lowbias32(counter ^ k) + key1)
 * ```
 *
 * For a fixed key it is a bijection of the counter, so distinct counters never repeat a draw
 * within 2^32 counters. Built only from u32 xor, `>>`, wrap-around multiply and wrap-around add,
 * which WGSL has, so the GPU engine reproduces it bit for bit.
 *
 * @param key0 - integer in [0, 2^32)
 * @param key1 - integer in [0, 2^32)
 * @param counter - integer in [0, 2^32)
 * @returns integer in [0, 2^32)
 */
export function counterRandom(key0: number, key1: number, counter: number): number {
  assertInteger('key0', key0, 0, UINT32_MAX);
  assertInteger('key1', key1, 0, UINT32_MAX);
  assertInteger('counter', counter, 0, UINT32_MAX);
  return lowbias32(lowbias32(counter ^ counterKey(key0, key1)) + key1);
}

/**
 * Maps a u32 draw to a uniform number in [0, 1): `(r >>> 8) * 2^-24`, a multiple of 2^-24 that is
 * exact in float32 (WGSL: `f32(r >> 8u) * 0x1p-24f`). Largest value 1 − 2^-24.
 */
export function uniformFromBits(r: number): number {
  return (r >>> 8) * UNIFORM_SCALE;
}

/** `uniformFromBits(counterRandom(key0, key1, counter))`: the draw {@link quantize} compares against. */
export function counterUniform(key0: number, key1: number, counter: number): number {
  return uniformFromBits(counterRandom(key0, key1, counter));
}
