import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ckksParamsId,
  DEFAULT_CKKS_PARAMS,
  PLAIN_LANES_DOMAIN,
  PlainLaneContext,
  PlainLaneKeyset,
  plainLanesId,
} from '../../crypto/ckks/index.ts';
import { CryptoError } from '../../src/errors/index.ts';

const ctx = new PlainLaneContext(DEFAULT_CKKS_PARAMS);
const keyset = new PlainLaneKeyset(ctx);

describe('plain lane payloads', () => {
  it('are one big-endian u64 per slot, N/2 slots, under an id no CKKS parameter set has', () => {
    expect(ctx.mode).toBe('plain');
    expect(ctx.slots).toBe(4096);
    expect(ctx.maxCiphertextBytes).toBe(8 * 4096);
    const payload = keyset.encrypt(Float64Array.of(1, 2 ** 32 + 5, 2 ** 42 - 1));
    expect(payload.length).toBe(8 * 4096);
    expect(Buffer.from(payload.subarray(0, 24)).toString('hex')).toBe(
      '0000000000000001' + '0000000100000005' + '000003ffffffffff',
    );
    expect(payload.subarray(24).every((b) => b === 0)).toBe(true);
    // Known answer: SHA-256 of the domain and the CKKS id, computed here with node's own hash.
    const expected = createHash('sha256')
      .update(PLAIN_LANES_DOMAIN)
      .update(ckksParamsId(DEFAULT_CKKS_PARAMS))
      .digest();
    expect(Buffer.from(plainLanesId(DEFAULT_CKKS_PARAMS))).toEqual(expected);
    expect(ctx.paramsId).toEqual(plainLanesId(DEFAULT_CKKS_PARAMS));
    expect(ctx.paramsId).not.toEqual(ckksParamsId(DEFAULT_CKKS_PARAMS));
  });

  it('round-trip any slot vector of integers below 2^exactBits', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 42 - 1 }), { maxLength: 64 }), (values) => {
        const back = keyset.decrypt(keyset.encrypt(Float64Array.from(values)));
        expect(Array.from(back.subarray(0, values.length))).toEqual(values);
        expect(back.subarray(values.length).every((v) => v === 0)).toBe(true);
      }),
    );
  });

  it('sum exactly, saturating at 2^exactBits (which then decodes as an overflow)', () => {
    const a = ctx.loadCiphertext(keyset.encrypt(Float64Array.of(3, 2 ** 41, 2 ** 42 - 1)));
    const b = ctx.loadCiphertext(keyset.encrypt(Float64Array.of(4, 2 ** 41 - 1, 1)));
    ctx.addInPlace(a, b);
    expect(Array.from(keyset.decrypt(ctx.serialize(a)).subarray(0, 3))).toEqual([7, 2 ** 42 - 1, 2 ** 42]);
    const c = ctx.loadCiphertext(keyset.encrypt(Float64Array.of(0, 1, 1)));
    ctx.addInPlace(a, c);
    // The sum stops at 2^42, which no site encodes; a saturated sum still loads (and decodes as an
    // overflow of its lanes).
    expect(a.values[1]).toBe(2 ** 42);
    expect(a.values[2]).toBe(2 ** 42);
    expect(ctx.loadCiphertext(ctx.serialize(a)).values[2]).toBe(2 ** 42);
    b.delete();
    expect(b.values.every((v) => v === 0)).toBe(true);
  });

  it('refuse a payload of another length, or a slot above 2^exactBits, naming it', () => {
    expect(() => ctx.loadCiphertext(new Uint8Array(8 * 4096 - 1))).toThrowError(
      /plain payload of 32767 bytes, 4096 slots take 32768/,
    );
    const big = keyset.encrypt(new Float64Array(1));
    new DataView(big.buffer).setUint32(8 * 7, 2 ** 10, false); // slot 7 = 2^42 + 1
    new DataView(big.buffer).setUint32(8 * 7 + 4, 1, false);
    const err = (() => {
      try {
        ctx.loadCiphertext(big);
      } catch (e) {
        return e;
      }
    })() as CryptoError;
    expect(err).toBeInstanceOf(CryptoError);
    expect(err.code).toBe('CKKS_PARAMS_MISMATCH');
    expect(err.message).toContain('slot 7 holds 4398046511105, above 2^42');
    expect(() => keyset.encrypt(Float64Array.of(0.5))).toThrowError(/slot 0 is 0.5/);
    expect(() => keyset.encrypt(Float64Array.of(-1))).toThrowError(/slot 0 is -1/);
    expect(() => keyset.encrypt(new Float64Array(4097))).toThrowError(/length 4097/);
  });
});
