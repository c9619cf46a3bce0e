import { CryptoError } from '../../src/errors/index.ts';
import type { LaneContext } from '../lanes/lane-cipher.ts';
import { assertCkksParams, type CkksParams, ckksParamsId, slotCount } from './ckks-params.ts';
import { loadSeal, type SealModule } from './seal-runtime.ts';

// SEAL's serialization header (16 bytes) and ciphertext metadata (parms id, sizes, scale) are
// well under this; measured at 113 bytes for N = 8192.
const CIPHERTEXT_HEADER_SLACK = 1024;

type Seal = SealModule;
/** A SEAL ciphertext handle; must be `.delete()`d by whoever owns it. */
export type SealCiphertext = ReturnType<Seal['Ciphertext']['prototype']['copy']>;
type SealContext = InstanceType<Seal['SEALContext']>;
type ParmsId = ReturnType<SealContext['lastParmsId']>;

/**
 * One SEAL context, encoder and evaluator for one parameter set. Shared by every keyset and
 * aggregator of the process (see {@link getCkksContext}); it holds no secret.
 *
 * Ciphertexts this context accepts are at the last modulus level (one modulus left), size 2,
 * at scale 2^scaleBits: the form sites encrypt in and aggregators add in.
 */
export class CkksContext implements LaneContext {
  readonly mode = 'he' as const;
  readonly params: CkksParams;
  /** 32-byte SHA-256 fingerprint of {@link params}. */
  readonly paramsId: Uint8Array;
  /** Slots per ciphertext (N/2). */
  readonly slots: number;
  /** Encoding scale 2^scaleBits. */
  readonly scale: number;
  /** @internal */ readonly seal: Seal;
  /** @internal */ readonly context: SealContext;
  /** @internal */ readonly encoder: InstanceType<Seal['CKKSEncoder']>;
  /** @internal */ readonly evaluator: InstanceType<Seal['Evaluator']>;
  /** @internal */ readonly lastParmsId: ParmsId;
  /**
   * Upper bound, in bytes, of a serialized ciphertext this federation adds: last level (one
   * modulus), size 2, uncompressed (2·N·8 bytes) plus SEAL's headers. Anything longer is refused
   * before SEAL parses it.
   */
  readonly maxCiphertextBytes: number;
  #deleted = false;

  /** Use {@link getCkksContext}; constructing directly bypasses the per-process cache. */
  constructor(seal: Seal, params: CkksParams) {
    assertCkksParams(params);
    this.params = Object.freeze({ ...params, coeffModulus: Object.freeze([...params.coeffModulus]) });
    this.paramsId = ckksParamsId(params);
    this.slots = slotCount(params);
    this.scale = 2 ** params.scaleBits;
    this.maxCiphertextBytes = 2 * params.polyModulusDegree * 8 + CIPHERTEXT_HEADER_SLACK;
    this.seal = seal;
    const parms = new seal.EncryptionParameters(seal.SchemeType.ckks);
    const moduli = seal.CoeffModulus.Create(params.polyModulusDegree, Int32Array.from(params.coeffModulus));
    try {
      parms.setPolyModulusDegree(params.polyModulusDegree);
      parms.setCoeffModulus(moduli);
      this.context = new seal.SEALContext(parms, true, seal.SecLevelType.tc128);
    } finally {
      moduli.delete();
      parms.delete();
    }
    if (!this.context.parametersSet()) {
      this.context.delete();
      throw new CryptoError(
        'CKKS_PARAMS_INVALID',
        `SEAL rejected the CKKS parameters ${JSON.stringify(params)}`,
      );
    }
    this.encoder = new seal.CKKSEncoder(this.context);
    this.evaluator = new seal.Evaluator(this.context);
    this.lastParmsId = this.context.lastParmsId();
  }

  /**
   * Loads a serialized ciphertext and checks it is one this federation can add: same parameters
   * (SEAL validates the parms id and every coefficient), last level, size 2, our scale.
   * Throws `CryptoError('CKKS_PARAMS_MISMATCH')` otherwise. The caller owns the result.
   */
  loadCiphertext(bytes: Uint8Array): SealCiphertext {
    if (bytes.length > this.maxCiphertextBytes) {
      throw new CryptoError(
        'CKKS_PARAMS_MISMATCH',
        `ciphertext of ${bytes.length} bytes is longer than any at the last level (${this.maxCiphertextBytes})`,
      );
    }
    const ct = new this.seal.Ciphertext();
    try {
      ct.loadFromArray(this.context, bytes);
    } catch (cause) {
      ct.delete();
      throw new CryptoError(
        'CKKS_PARAMS_MISMATCH',
        `ciphertext of ${bytes.length} bytes does not load under CKKS parameters N=${this.params.polyModulusDegree} q=[${this.params.coeffModulus.join(',')}]`,
        { cause },
      );
    }
    if (ct.coeffModulusSize() !== 1 || ct.size() !== 2 || ct.scale() !== this.scale) {
      const got = `levels=${ct.coeffModulusSize()} size=${ct.size()} scale=2^${Math.log2(ct.scale())}`;
      ct.delete();
      throw new CryptoError(
        'CKKS_PARAMS_MISMATCH',
        `ciphertext has ${got}, expected last level, size 2, scale 2^${this.params.scaleBits}`,
      );
    }
    return ct;
  }

  /** Adds `addend` into `accumulator` in place (homomorphic addition of the slot vectors). */
  addInPlace(accumulator: SealCiphertext, addend: SealCiphertext): void {
    this.evaluator.addInplace(accumulator, addend);
  }

  /** Serializes a ciphertext (uncompressed SEAL format) into a fresh JS-owned buffer. */
  serialize(ct: SealCiphertext): Uint8Array {
    return new Uint8Array(ct.saveToArray(this.seal.ComprModeType.none) as Uint8Array);
  }

  /** Frees the SEAL objects. Only for contexts built directly, never for cached ones. */
  delete(): void {
    if (this.#deleted) return;
    this.#deleted = true;
    this.lastParmsId.delete();
    this.evaluator.delete();
    this.encoder.delete();
    this.context.delete();
  }
}

const contexts = new Map<string, Promise<CkksContext>>();

/**
 * The process-wide context for `params` (created on first use, then shared). SEAL's heap never
 * shrinks, so contexts are cached rather than rebuilt per round.
 */
export function getCkksContext(params: CkksParams): Promise<CkksContext> {
  assertCkksParams(params);
  const key = Buffer.from(ckksParamsId(params)).toString('hex');
  let ctx = contexts.get(key);
  if (!ctx) {
    ctx = loadSeal().then((seal) => new CkksContext(seal, params));
    contexts.set(key, ctx);
    ctx.catch(() => contexts.delete(key));
  }
  return ctx;
}
