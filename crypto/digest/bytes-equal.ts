import { timingSafeEqual } from 'node:crypto';

/**
 * Compares two byte arrays in time independent of their contents (`crypto.timingSafeEqual`).
 * Lengths are treated as public: arrays of different lengths return `false` immediately.
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}
