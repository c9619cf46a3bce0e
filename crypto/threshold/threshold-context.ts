import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { loadSeal, type SealModule } from '../ckks/seal-runtime.ts';
import { assertPoly, type RnsPoly, type RnsShape } from './rns-poly.ts';
import {
  assertThresholdParams,
  type ThresholdParams,
  thresholdLimbs,
  thresholdParamsId,
} from './threshold-params.ts';

type Seal = SealModule;
type SealContext = InstanceType<Seal['SEALContext']>;
type SealCiphertext = InstanceType<Seal['Ciphertext']>;
type SealSecretKey = InstanceType<Seal['SecretKey']>;

// SEAL's serialization: a 16-byte header, then the object's members. In a ciphertext, the
// members open with the 32-byte parms id and then the one-byte NTT-form flag.
const NTT_FLAG_OFFSET = 16 + 32;

/**
 * The SEAL side of threshold CKKS for one parameter set: the context, the CKKS encoder, and the
 * byte templates that turn a {@link RnsPoly} into a SEAL ciphertext or plaintext and back.
 *
 * SEAL has no API for polynomials, so polynomials cross into SEAL as crafted serializations: a
 * SEAL header taken from an object SEAL made itself, followed by the polynomial's words. SEAL
 * parses and validates every crafted object (parameters, level, each word below its prime), and
 * computes the two things done here in C++: the NTT of sampled noise (a coefficient-form
 * ciphertext transformed in place) and the CKKS encoding and decoding of slot vectors.
 * `test/crypto/threshold/threshold-context.test.ts` checks every crafted object against SEAL's
 * own encryption and decryption with known answers.
 */
export class ThresholdContext implements RnsShape {
  readonly params: ThresholdParams;
  /** 32-byte SHA-256 fingerprint of {@link params}. */
  readonly paramsId: Uint8Array;
  /** Ring degree N. */
  readonly n: number;
  /** Primes of the limbs a ciphertext carries (the data level: every modulus but the special one). */
  readonly moduli: readonly bigint[];
  /** Slots per ciphertext (N/2). */
  readonly slots: number;
  /** Encoding scale Δ = 2^scaleBits. */
  readonly scale: number;
  /** Bytes of one polynomial on the wire (limbs · N · 8). */
  readonly polyBytes: number;
  /** @internal */ readonly seal: Seal;
  /** @internal */ readonly context: SealContext;
  /** @internal */ readonly encoder: InstanceType<Seal['CKKSEncoder']>;
  /** @internal */ readonly evaluator: InstanceType<Seal['Evaluator']>;
  readonly #ciphertextHeader: Uint8Array;
  readonly #plaintextHeader: Uint8Array;
  readonly #secretKeyHeader: Uint8Array;
  readonly #keyLimbs: number;
  #deleted = false;

  /** Use {@link getThresholdContext}; constructing directly bypasses the per-process cache. */
  constructor(seal: Seal, params: ThresholdParams) {
    assertThresholdParams(params);
    this.params = Object.freeze({ ...params, coeffModulus: Object.freeze([...params.coeffModulus]) });
    this.paramsId = thresholdParamsId(params);
    this.n = params.polyModulusDegree;
    this.slots = this.n / 2;
    this.scale = 2 ** params.scaleBits;
    this.seal = seal;
    const limbs = thresholdLimbs(params);
    this.#keyLimbs = params.coeffModulus.length;
    this.polyBytes = limbs * this.n * 8;
    const parms = new seal.EncryptionParameters(seal.SchemeType.ckks);
    const moduli = seal.CoeffModulus.Create(this.n, Int32Array.from(params.coeffModulus));
    try {
      parms.setPolyModulusDegree(this.n);
      parms.setCoeffModulus(moduli);
      this.context = new seal.SEALContext(parms, true, seal.SecLevelType.tc128);
      const primes: bigint[] = [];
      for (let l = 0; l < limbs; l++) {
        const m = moduli.get(l)!;
        primes.push(m.value());
        m.delete();
      }
      this.moduli = Object.freeze(primes);
    } finally {
      moduli.delete();
      parms.delete();
    }
    if (!this.context.parametersSet()) {
      this.context.delete();
      throw new CryptoError(
        'CKKS_PARAMS_INVALID',
        `SEAL rejected the threshold CKKS parameters ${JSON.stringify(params)}`,
      );
    }
    this.encoder = new seal.CKKSEncoder(this.context);
    this.evaluator = new seal.Evaluator(this.context);
    // Templates: objects SEAL makes at the data level and scale Δ; their headers are reused.
    const keygen = new seal.KeyGenerator(this.context);
    const sk = keygen.secretKey();
    const pk = keygen.createPublicKey();
    const encryptor = new seal.Encryptor(this.context, pk, sk);
    const plain = new seal.Plaintext();
    const ct = new seal.Ciphertext();
    try {
      this.encoder.encode(new Float64Array(this.slots), this.scale, plain);
      encryptor.encryptSymmetric(plain, ct);
      const p = this.#save(plain);
      const c = this.#save(ct);
      const k = this.#save(sk);
      this.#plaintextHeader = p.slice(0, p.length - this.polyBytes);
      this.#ciphertextHeader = c.slice(0, c.length - 2 * this.polyBytes);
      this.#secretKeyHeader = k.slice(0, k.length - this.#keyLimbs * this.n * 8);
      k.fill(0);
      if (this.#ciphertextHeader[NTT_FLAG_OFFSET] !== 1)
        throw new Error('SEAL ciphertext layout changed: NTT flag not found');
    } finally {
      for (const o of [ct, plain, encryptor, pk, sk, keygen]) o.delete();
    }
  }

  /** The CKKS encoding of `values` (length ≤ slots) at scale Δ, in NTT form at the data level. */
  encode(values: Float64Array): RnsPoly {
    this.#assertLive();
    if (values.length > this.slots) {
      throw new InvalidArgumentError(`slot vector length ${values.length}, a ciphertext holds ${this.slots}`);
    }
    const plain = new this.seal.Plaintext();
    try {
      this.encoder.encode(values, this.scale, plain);
      return this.#tail(this.#save(plain), 0);
    } finally {
      plain.delete();
    }
  }

  /** Decodes a plaintext polynomial (NTT form, scale Δ) to its slot values. */
  decode(p: RnsPoly): Float64Array {
    this.#assertLive();
    assertPoly(this, p, 'plaintext');
    const plain = new this.seal.Plaintext();
    try {
      plain.loadFromArray(this.context, this.#craft(this.#plaintextHeader, [p]));
      return Float64Array.from(this.encoder.decodeFloat64(plain) as Float64Array);
    } finally {
      plain.delete();
    }
  }

  /** The NTT form of a coefficient-form polynomial, computed by SEAL. */
  toNtt(coefficients: RnsPoly): RnsPoly {
    return this.#transform(coefficients, true);
  }

  /** The coefficient form of an NTT-form polynomial, computed by SEAL. */
  fromNtt(p: RnsPoly): RnsPoly {
    return this.#transform(p, false);
  }

  /**
   * A SEAL ciphertext (c0, c1) at the data level and scale Δ, NTT form; the caller owns it. For
   * known-answer tests and for anyone who wants SEAL to hold a threshold ciphertext.
   */
  sealCiphertext(c0: RnsPoly, c1: RnsPoly): SealCiphertext {
    this.#assertLive();
    assertPoly(this, c0, 'c0');
    assertPoly(this, c1, 'c1');
    const ct = new this.seal.Ciphertext();
    try {
      ct.loadFromArray(this.context, this.#craft(this.#ciphertextHeader, [c0, c1]));
    } catch (cause) {
      ct.delete();
      throw new CryptoError('POLY_OUT_OF_RANGE', 'SEAL refused a crafted ciphertext', { cause });
    }
    return ct;
  }

  /** The polynomials (c0, c1) of a SEAL ciphertext at the data level, NTT form. */
  ciphertextPolys(ct: SealCiphertext): [RnsPoly, RnsPoly] {
    this.#assertLive();
    if (!ct.isNttForm() || ct.size() !== 2 || ct.coeffModulusSize() !== this.moduli.length) {
      throw new InvalidArgumentError('ciphertext must be size 2, NTT form, at the data level');
    }
    const bytes = this.#save(ct);
    return [this.#tail(bytes, 1), this.#tail(bytes, 0)];
  }

  /**
   * A SEAL secret key whose data limbs hold `s` (NTT form) and whose special limb is zero: SEAL's
   * decryptor at the data level reads only the data limbs. For known-answer tests; the caller
   * owns (and must delete) it.
   */
  sealSecretKey(s: RnsPoly): SealSecretKey {
    this.#assertLive();
    assertPoly(this, s, 'secret');
    const special = new BigUint64Array((this.#keyLimbs - this.moduli.length) * this.n);
    const bytes = this.#craft(this.#secretKeyHeader, [s, special]);
    const sk = new this.seal.SecretKey();
    try {
      sk.loadFromArray(this.context, bytes);
    } catch (cause) {
      sk.delete();
      throw new CryptoError('KEY_INVALID', 'SEAL refused a crafted secret key', { cause });
    } finally {
      bytes.fill(0);
    }
    return sk;
  }

  /** Frees the SEAL objects. Only for contexts built directly, never for cached ones. */
  delete(): void {
    if (this.#deleted) return;
    this.#deleted = true;
    this.evaluator.delete();
    this.encoder.delete();
    this.context.delete();
  }

  #transform(p: RnsPoly, toNtt: boolean): RnsPoly {
    this.#assertLive();
    assertPoly(this, p, 'polynomial');
    // SEAL refuses a ciphertext whose second polynomial is zero (transparent), so p goes in both.
    if (p.every((w) => w === 0n)) return p.slice();
    const bytes = this.#craft(this.#ciphertextHeader, [p, p]);
    bytes[NTT_FLAG_OFFSET] = toNtt ? 0 : 1;
    const ct = new this.seal.Ciphertext();
    try {
      ct.loadFromArray(this.context, bytes);
      if (toNtt) this.evaluator.cipherTransformToNttInplace(ct);
      else this.evaluator.cipherTransformFromNttInplace(ct);
      return this.#tail(this.#save(ct), 1);
    } finally {
      ct.delete();
    }
  }

  #save(o: { saveToArray(mode: unknown): unknown }): Uint8Array {
    return new Uint8Array(o.saveToArray(this.seal.ComprModeType.none) as Uint8Array);
  }

  /** The polynomial `fromEnd` polynomials before the end of a SEAL serialization (0 = the last). */
  #tail(bytes: Uint8Array, fromEnd: number): RnsPoly {
    const end = bytes.length - fromEnd * this.polyBytes;
    return new BigUint64Array(
      bytes.buffer.slice(bytes.byteOffset + end - this.polyBytes, bytes.byteOffset + end),
    );
  }

  #craft(header: Uint8Array, polys: RnsPoly[]): Uint8Array {
    const out = new Uint8Array(header.length + polys.reduce((a, p) => a + p.byteLength, 0));
    out.set(header, 0);
    let at = header.length;
    for (const p of polys) {
      out.set(new Uint8Array(p.buffer, p.byteOffset, p.byteLength), at);
      at += p.byteLength;
    }
    return out;
  }

  #assertLive(): void {
    if (this.#deleted) throw new InvalidArgumentError('threshold context used after delete()');
  }
}

const contexts = new Map<string, Promise<ThresholdContext>>();

/** The process-wide context for `params` (created on first use, then shared). */
export function getThresholdContext(params: ThresholdParams): Promise<ThresholdContext> {
  assertThresholdParams(params);
  const key = Buffer.from(thresholdParamsId(params)).toString('hex');
  let ctx = contexts.get(key);
  if (!ctx) {
    ctx = loadSeal().then((seal) => new ThresholdContext(seal, params));
    contexts.set(key, ctx);
    ctx.catch(() => contexts.delete(key));
  }
  return ctx;
}
