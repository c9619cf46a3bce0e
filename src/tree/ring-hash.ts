import { createHash } from 'node:crypto';

/**
 * Position of `text` on the ring: the first 8 bytes of SHA-256(UTF-8 `text`), read big-endian,
 * as an unsigned 64-bit `bigint` in [0, 2⁶⁴).
 *
 * Invariants: a pure function of `text` (same value on every host, every run); virtual nodes
 * (`<id>#<i>`) and keys are hashed the same way, so both live in one 64-bit space.
 */
export function ringHash(text: string): bigint {
  return createHash('sha256').update(text, 'utf8').digest().readBigUInt64BE(0);
}

/** The text hashed for virtual node `index` of node `id`: `<id>#<index>`. */
export function vnodeLabel(id: string, index: number): string {
  return `${id}#${index}`;
}
