import { createHash } from 'node:crypto';
import type { SignatureAlgorithm } from './algorithm.ts';

/** Positive verifications remembered per process (least recently used dropped first). */
export const VERIFIED_CACHE_SIZE = 16_384;

const verified = new Map<string, true>();
let enabled = false;

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

/**
 * The cache key of one verification: SHA-256 over the algorithm, the public key, the signature
 * and the signed bytes (domain included), each length-prefixed. A hit therefore means these exact
 * bytes verified before under this exact key; finding a second input with the same key would be
 * a SHA-256 collision.
 */
export function verificationKey(
  algorithm: SignatureAlgorithm,
  publicKey: Uint8Array,
  signature: Uint8Array,
  signed: Uint8Array,
): string {
  const h = createHash('sha256');
  h.update(algorithm);
  for (const part of [publicKey, signature, signed]) h.update(u32(part.length)).update(part);
  return h.digest('base64url');
}

/**
 * Turns the process-wide cache of successful verifications on (off by default, so a member alone
 * in its process, and every benchmark, checks each signature it is given). `cohort swarm` turns it
 * on: there many members share one process and each checks the same log entries, votes and
 * manifests, so each signature is then checked once per process instead of once per member.
 */
export function enableVerifiedCache(): void {
  enabled = true;
}

/** Whether {@link enableVerifiedCache} was called in this process. */
export function verifiedCacheEnabled(): boolean {
  return enabled;
}

/**
 * Whether `key` verified before in this process. Only successes are kept, so a flood of bad
 * signatures costs its verifications and evicts nothing that would let a forgery pass.
 */
export function verifiedBefore(key: string): boolean {
  if (!verified.has(key)) return false;
  verified.delete(key);
  verified.set(key, true);
  return true;
}

/** Records a successful verification, evicting the least recently used beyond the cache size. */
export function rememberVerified(key: string): void {
  verified.delete(key);
  verified.set(key, true);
  if (verified.size > VERIFIED_CACHE_SIZE) {
    const oldest = verified.keys().next();
    if (!oldest.done) verified.delete(oldest.value);
  }
}

/** Empties the cache and turns it off again (tests). */
export function resetVerifiedCache(): void {
  verified.clear();
  enabled = false;
}
