// The aggregate MAC's primitives against known answers computed with OpenSSL 3 (`openssl kdf …
// HKDF`, `openssl enc -aes-256-ctr`, `openssl dgst -mac HMAC`), and its arithmetic against a
// plain BigInt sum.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AggregateMacKey,
  MAC_PRIME,
  type MacNonce,
  macAccumulate,
  macSiteOffset,
  macWeights,
} from '../../crypto/mac/index.ts';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i);
const NONCE: MacNonce = { federation: 'kat-fed', round: 7, attempt: Uint8Array.of(1, 2, 3, 4) };

describe('aggregate MAC primitives', () => {
  it('weights: HKDF-SHA256 then AES-256-CTR, 8 bytes a weight masked to 61 bits (known answer)', () => {
    const key = AggregateMacKey.fromBytes(KEY);
    expect(Array.from(macWeights(key, NONCE, 0, 4))).toEqual([
      381099591985128293n,
      339439029861214566n,
      1300112136220765680n,
      233126066191524820n,
    ]);
  });

  it('site offset: HMAC-SHA256 of the nonce and the site, first 8 bytes mod p (known answer)', () => {
    const key = AggregateMacKey.fromBytes(KEY);
    expect(macSiteOffset(key, NONCE, 'site-1')).toBe(1887656181694683664n);
    expect(macSiteOffset(key, NONCE, 'site-2')).not.toBe(1887656181694683664n);
  });

  it('any range of weights equals the same positions of a longer range', () => {
    const key = AggregateMacKey.random();
    const all = macWeights(key, NONCE, 0, 40);
    fc.assert(
      fc.property(fc.nat(39), fc.nat(10), (first, n) => {
        const count = Math.min(n, 40 - first);
        expect(Array.from(macWeights(key, NONCE, first, count))).toEqual(
          Array.from(all.subarray(first, first + count)),
        );
      }),
    );
  });

  it('weights and offsets depend on the key, the federation, the round and the attempt', () => {
    const key = AggregateMacKey.fromBytes(KEY);
    const base = macWeights(key, NONCE, 0, 2);
    for (const other of [
      { ...NONCE, federation: 'kat-feD' },
      { ...NONCE, round: 8 },
      { ...NONCE, attempt: Uint8Array.of(1, 2, 3, 5) },
    ]) {
      expect(macWeights(key, other, 0, 2)).not.toEqual(base);
      expect(macSiteOffset(key, other, 'site-1')).not.toBe(macSiteOffset(key, NONCE, 'site-1'));
    }
    expect(macWeights(AggregateMacKey.random(), NONCE, 0, 2)).not.toEqual(base);
  });

  it('the key comes from the data key by HKDF, per federation, and is wiped on delete', () => {
    const dataKey = new Uint8Array(32).fill(7);
    const a = AggregateMacKey.fromDataKey(dataKey, 'fed-a');
    const b = AggregateMacKey.fromDataKey(dataKey, 'fed-b');
    expect(a.bytes()).not.toEqual(b.bytes());
    expect(AggregateMacKey.fromDataKey(dataKey, 'fed-a').bytes()).toEqual(a.bytes());
    const raw = a.bytes();
    a.delete();
    expect(raw.every((x) => x === 0)).toBe(true);
    expect(() => a.bytes()).toThrow(/deleted/);
    expect(() => AggregateMacKey.fromDataKey(new Uint8Array(16), 'fed-a')).toThrow(/dataKey/);
  });

  it('accumulates Σ r·v mod p exactly, negatives included', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.bigInt({ min: 0n, max: MAC_PRIME - 1n }),
            fc.integer({ min: -(2 ** 43), max: 2 ** 43 }),
          ),
          {
            maxLength: 700,
          },
        ),
        fc.bigInt({ min: 0n, max: MAC_PRIME - 1n }),
        (pairs, acc) => {
          const weights = BigUint64Array.from(pairs.map(([r]) => r));
          const values = pairs.map(([, v]) => v);
          let expected = acc;
          for (const [r, v] of pairs) expected += r * BigInt(v);
          expected = ((expected % MAC_PRIME) + MAC_PRIME) % MAC_PRIME;
          expect(macAccumulate(weights, values, acc)).toBe(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
