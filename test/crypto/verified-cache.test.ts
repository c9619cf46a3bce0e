// The process-wide cache of successful signature verifications (crypto/signature/verified-cache.ts):
// off by default; when on, only successes are remembered, and any other key, message, domain or
// signature is checked for real.
import { afterEach, describe, expect, it } from 'vitest';
import { generateSigningKeyPair, sign, verify } from '../../crypto/signature/index.ts';
import { signingMessage } from '../../crypto/signature/signing-message.ts';
import {
  enableVerifiedCache,
  rememberVerified,
  resetVerifiedCache,
  VERIFIED_CACHE_SIZE,
  verificationKey,
  verifiedBefore,
} from '../../crypto/signature/verified-cache.ts';

const kp = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(1));
const other = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(2));
const msg = new TextEncoder().encode('round 7 vote');
const sig = sign(kp, 'cohort.test', msg);
const keyOf = (m: Uint8Array, s: Uint8Array, pk = kp.publicKey, domain = 'cohort.test') =>
  verificationKey('falcon-512', pk, s, signingMessage(domain, m));

afterEach(() => resetVerifiedCache());

describe('verified-signature cache', () => {
  it('is off by default: a success is not remembered', () => {
    expect(verify(kp, 'cohort.test', msg, sig)).toBe(true);
    expect(verifiedBefore(keyOf(msg, sig))).toBe(false);
  });

  it('when on, remembers a success and answers nothing else from it', () => {
    enableVerifiedCache();
    expect(verify(kp, 'cohort.test', msg, sig)).toBe(true);
    expect(verifiedBefore(keyOf(msg, sig))).toBe(true);
    const tampered = msg.slice();
    tampered[0]! ^= 1;
    expect(verify(kp, 'cohort.test', tampered, sig)).toBe(false);
    expect(verify(kp, 'cohort.other', msg, sig)).toBe(false);
    expect(verify(other, 'cohort.test', msg, sig)).toBe(false);
    const badSig = sig.slice();
    badSig[badSig.length - 1]! ^= 1;
    expect(verify(kp, 'cohort.test', msg, badSig)).toBe(false);
    // Failures are never remembered.
    expect(verifiedBefore(keyOf(tampered, sig))).toBe(false);
    expect(verifiedBefore(keyOf(msg, badSig))).toBe(false);
    expect(verifiedBefore(keyOf(msg, sig, other.publicKey))).toBe(false);
    expect(verifiedBefore(keyOf(msg, sig, kp.publicKey, 'cohort.other'))).toBe(false);
  });

  it('keys differ when bytes move between the length-prefixed parts', () => {
    const a = verificationKey('falcon-512', new Uint8Array([1, 2]), new Uint8Array([3]), new Uint8Array([4]));
    const b = verificationKey('falcon-512', new Uint8Array([1]), new Uint8Array([2, 3]), new Uint8Array([4]));
    const c = verificationKey('ml-dsa-65', new Uint8Array([1, 2]), new Uint8Array([3]), new Uint8Array([4]));
    expect(new Set([a, b, c]).size).toBe(3);
  });

  it('drops the least recently used beyond its size', () => {
    enableVerifiedCache();
    for (let i = 0; i < VERIFIED_CACHE_SIZE; i++) rememberVerified(`k${i}`);
    expect(verifiedBefore('k0')).toBe(true); // now the most recently used
    rememberVerified('new');
    expect(verifiedBefore('k0')).toBe(true);
    expect(verifiedBefore('k1')).toBe(false);
    expect(verifiedBefore('new')).toBe(true);
  });
});
