import { sha256 } from '../../crypto/digest/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';

/**
 * The stored form of an aggregate: `u32(count) ‖ (u32(length) ‖ ciphertext)*`, big-endian, the
 * ciphertexts in block order. Its SHA-256 is the round's aggregate digest ({@link aggregateDigest}).
 */
export function encodeAggregateObject(ciphertexts: readonly Uint8Array[]): Uint8Array {
  let total = 4;
  for (const c of ciphertexts) total += 4 + c.length;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, ciphertexts.length, false);
  let at = 4;
  for (const c of ciphertexts) {
    view.setUint32(at, c.length, false);
    out.set(c, at + 4);
    at += 4 + c.length;
  }
  return out;
}

/** Inverse of {@link encodeAggregateObject}. */
export function decodeAggregateObject(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 4) throw new InvalidArgumentError('aggregate object is truncated');
  const count = view.getUint32(0, false);
  const out: Uint8Array[] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) throw new InvalidArgumentError('aggregate object is truncated');
    const n = view.getUint32(at, false);
    if (at + 4 + n > bytes.length) throw new InvalidArgumentError('aggregate object is truncated');
    out.push(bytes.slice(at + 4, at + 4 + n));
    at += 4 + n;
  }
  if (at !== bytes.length) throw new InvalidArgumentError('trailing bytes after the aggregate object');
  return out;
}

/**
 * The aggregate digest of Prepare and the commit: SHA-256 over the ciphertexts in order with their
 * lengths, i.e. SHA-256 of {@link encodeAggregateObject}. A site can recompute it from Prepare's
 * ciphertexts.
 */
export function aggregateDigest(ciphertexts: readonly Uint8Array[]): Uint8Array {
  return sha256(encodeAggregateObject(ciphertexts));
}
