import { beforeAll, describe, expect, it } from 'vitest';
import {
  addInto,
  centredIntegers,
  commonRandomPoly,
  DEFAULT_THRESHOLD_PARAMS,
  getThresholdContext,
  mulAddInto,
  type RnsPoly,
  SiteSecret,
  subInto,
  type ThresholdContext,
  ternaryCoefficients,
  zeroPoly,
} from '../../crypto/threshold/index.ts';

// Known-answer tests of every object the threshold layer crafts for SEAL: SEAL must load it and
// SEAL's own encryption and decryption must agree with the polynomial arithmetic done here.

let ctx: ThresholdContext;
const epoch = new Uint8Array(32).fill(7);

beforeAll(async () => {
  ctx = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
});

function constant(c: bigint): RnsPoly {
  const p = zeroPoly(ctx);
  for (let l = 0; l < ctx.moduli.length; l++) p[l * ctx.n] = c;
  return p;
}

function monomial(k: number): RnsPoly {
  const p = zeroPoly(ctx);
  for (let l = 0; l < ctx.moduli.length; l++) p[l * ctx.n + k] = 1n;
  return p;
}

function integers(count: number, bits: number): Float64Array {
  return Float64Array.from({ length: count }, () => Math.floor(Math.random() * 2 ** bits) - 2 ** (bits - 1));
}

/** The data limbs of a SEAL secret key, as the words a crafted ciphertext multiplies. */
function sealSecretWords(sk: { saveToArray(m: unknown): unknown }): RnsPoly {
  const bytes = new Uint8Array(sk.saveToArray(ctx.seal.ComprModeType.none) as Uint8Array);
  const keyLimbs = DEFAULT_THRESHOLD_PARAMS.coeffModulus.length;
  const start = bytes.length - keyLimbs * ctx.n * 8;
  return new BigUint64Array(bytes.buffer.slice(start, start + ctx.polyBytes));
}

describe('ThresholdContext', () => {
  it('uses the primes SEAL chose for [60, 60, 60]: two data limbs, each ≡ 1 mod 2N', () => {
    expect(ctx.moduli).toHaveLength(2);
    for (const q of ctx.moduli) {
      expect(q.toString(2)).toHaveLength(60);
      expect(q % BigInt(2 * ctx.n)).toBe(1n);
    }
    expect(ctx.polyBytes).toBe(2 * 8192 * 8);
  });

  it('NTT known answers: a constant is constant; X · X^(N−1) = X^N = −1 (negacyclic)', () => {
    const seven = ctx.toNtt(constant(7n));
    expect(new Set(seven)).toEqual(new Set([7n]));
    const prod = zeroPoly(ctx);
    mulAddInto(ctx, prod, ctx.toNtt(monomial(1)), ctx.toNtt(monomial(ctx.n - 1)));
    const back = ctx.fromNtt(prod);
    expect(back[0]).toBe(ctx.moduli[0]! - 1n);
    expect(back[ctx.n]).toBe(ctx.moduli[1]! - 1n);
    expect(back.filter((w) => w !== 0n)).toHaveLength(2);
  });

  it('fromNtt inverts toNtt', () => {
    const s = ternaryCoefficients(ctx);
    expect(ctx.fromNtt(ctx.toNtt(s))).toEqual(s);
  });

  it('decode inverts encode', () => {
    const v = integers(ctx.slots, 40);
    const back = ctx.decode(ctx.encode(v));
    for (let i = 0; i < v.length; i++) expect(Math.round(back[i]!)).toBe(v[i]);
  });

  it('SEAL decrypts a site ciphertext (c0, a) under a SEAL secret key crafted from the site secret', () => {
    const secret = SiteSecret.generate(ctx);
    const a = commonRandomPoly(ctx, epoch, 'round:1', 0);
    const v = integers(ctx.slots, 42);
    const c0 = secret.encrypt(v, a);
    const words = secret.exportWords();
    const sk = ctx.sealSecretKey(words);
    const ct = ctx.sealCiphertext(c0, a);
    const decryptor = new ctx.seal.Decryptor(ctx.context, sk);
    const plain = new ctx.seal.Plaintext();
    try {
      decryptor.decrypt(ct, plain);
      const got = ctx.encoder.decodeFloat64(plain) as Float64Array;
      // Doubles at 2^41 are spaced 2^−11 apart, so a few ulps of decoding error is all there is.
      let max = 0;
      for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(got[i]! - v[i]!));
      expect(max).toBeLessThan(0.01);
    } finally {
      for (const o of [plain, decryptor, ct, sk]) o.delete();
      words.fill(0n);
      secret.wipe();
    }
  });

  it('c0 + c1·s of a ciphertext SEAL encrypted itself decodes to the message (SEAL key, our arithmetic)', () => {
    const keygen = new ctx.seal.KeyGenerator(ctx.context);
    const sk = keygen.secretKey();
    const pk = keygen.createPublicKey();
    const encryptor = new ctx.seal.Encryptor(ctx.context, pk, sk);
    const plain = new ctx.seal.Plaintext();
    const ct = new ctx.seal.Ciphertext();
    try {
      const v = integers(ctx.slots, 30);
      ctx.encoder.encode(v, ctx.scale, plain);
      encryptor.encryptSymmetric(plain, ct);
      const [c0, c1] = ctx.ciphertextPolys(ct);
      mulAddInto(ctx, c0, c1, sealSecretWords(sk));
      const got = ctx.decode(c0);
      for (let i = 0; i < v.length; i++) expect(Math.round(got[i]!)).toBe(v[i]);
    } finally {
      for (const o of [ct, plain, encryptor, pk, sk, keygen]) o.delete();
    }
  });

  it('a fresh ciphertext carries small noise: c0 + a·s − Δm has coefficients within ±21 (plus encoding rounding)', () => {
    const secret = SiteSecret.generate(ctx);
    const a = commonRandomPoly(ctx, epoch, 'round:1', 1);
    const v = integers(ctx.slots, 20);
    const c0 = secret.encrypt(v, a);
    mulAddInto(ctx, c0, a, secret.exportWords());
    subInto(ctx, c0, ctx.encode(v));
    const e = centredIntegers(ctx, ctx.fromNtt(c0));
    const max = e.reduce((m, x) => {
      const a = x < 0n ? -x : x;
      return a > m ? a : m;
    }, 0n);
    expect(max).toBeLessThanOrEqual(21n);
    expect(max).toBeGreaterThan(5n);
    secret.wipe();
  });

  it('refuses a polynomial with a word not below its prime, and SEAL never sees it', () => {
    const p = constant(1n);
    p[5] = ctx.moduli[0]!;
    expect(() => ctx.decode(p)).toThrow(expect.objectContaining({ code: 'POLY_OUT_OF_RANGE' }));
    expect(() => ctx.sealCiphertext(p, p)).toThrow(expect.objectContaining({ code: 'POLY_OUT_OF_RANGE' }));
    expect(() => ctx.toNtt(new BigUint64Array(3))).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
  });

  it('common random polynomials: the same inputs give the same polynomial, any other input another', () => {
    const a = commonRandomPoly(ctx, epoch, 'round:1', 0);
    expect(commonRandomPoly(ctx, epoch, 'round:1', 0)).toEqual(a);
    for (const other of [
      commonRandomPoly(ctx, epoch, 'round:1', 1),
      commonRandomPoly(ctx, epoch, 'round:2', 0),
      commonRandomPoly(ctx, new Uint8Array(32).fill(8), 'round:1', 0),
    ]) {
      let same = 0;
      for (let i = 0; i < a.length; i++) if (a[i] === other[i]) same++;
      expect(same).toBeLessThan(3);
    }
    for (let l = 0; l < ctx.moduli.length; l++) {
      for (let i = l * ctx.n; i < (l + 1) * ctx.n; i++) expect(a[i]! < ctx.moduli[l]!).toBe(true);
    }
  });

  it('addInto is addition mod each prime', () => {
    const p = constant(ctx.moduli[0]! - 1n);
    addInto(ctx, p, constant(2n));
    expect(p[0]).toBe(1n);
  });
});
