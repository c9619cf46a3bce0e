import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import type { LaneKeyset } from '../lanes/lane-cipher.ts';
import { readKeyFile, writeKeyFile } from '../signature/key-file-io.ts';
import type { CkksContext, SealCiphertext } from './ckks-context.ts';

type Encryptor = InstanceType<CkksContext['seal']['Encryptor']>;

const MAGIC = new TextEncoder().encode('CCK1');
const HEADER = MAGIC.length + 32;

/**
 * The federation's CKKS secret key (shared by sites, never by aggregators or the coordinator)
 * with the encryptor and decryptor built on it.
 *
 * Encryption is secret-key encryption in SEAL's seeded form at the last modulus level: the
 * second polynomial is replaced by a 64-byte seed, so a ciphertext of N=8192 is 16 bytes per slot
 * (64 for a public-key ciphertext at the top level). Call {@link delete} when done.
 */
export class CkksKeyset implements LaneKeyset {
  readonly ctx: CkksContext;
  readonly #secretKey: InstanceType<CkksContext['seal']['SecretKey']>;
  readonly #publicKey: InstanceType<CkksContext['seal']['PublicKey']>;
  readonly #encryptor: Encryptor;
  readonly #decryptor: InstanceType<CkksContext['seal']['Decryptor']>;
  #deleted = false;

  private constructor(ctx: CkksContext, secretKey: InstanceType<CkksContext['seal']['SecretKey']>) {
    this.ctx = ctx;
    const { seal, context } = ctx;
    this.#secretKey = secretKey;
    const keygen = new seal.KeyGenerator(context, secretKey);
    try {
      // SEAL's Encryptor constructor wants a public key even for symmetric use; it is never exported.
      this.#publicKey = keygen.createPublicKey();
    } finally {
      keygen.delete();
    }
    this.#encryptor = new seal.Encryptor(context, this.#publicKey, secretKey);
    this.#decryptor = new seal.Decryptor(context, secretKey);
  }

  /** Creates a fresh secret key (key ceremony). */
  static create(ctx: CkksContext): CkksKeyset {
    const keygen = new ctx.seal.KeyGenerator(ctx.context);
    try {
      return new CkksKeyset(ctx, keygen.secretKey());
    } finally {
      keygen.delete();
    }
  }

  /** Loads a secret key exported by {@link exportSecretKey}; refuses one made for other parameters. */
  static import(ctx: CkksContext, bytes: Uint8Array): CkksKeyset {
    if (bytes.length <= HEADER || !MAGIC.every((b, i) => bytes[i] === b)) {
      throw new CryptoError('KEY_INVALID', `CKKS secret key: ${bytes.length} bytes without the CCK1 header`);
    }
    const paramsId = bytes.subarray(MAGIC.length, HEADER);
    if (!paramsId.every((b, i) => b === ctx.paramsId[i])) {
      throw new CryptoError('CKKS_PARAMS_MISMATCH', 'CKKS secret key was made for other CKKS parameters');
    }
    const sk = new ctx.seal.SecretKey();
    // node-seal accepts a plain Uint8Array only (a Buffer, e.g. from readFileSync, is refused).
    const raw = new Uint8Array(bytes.subarray(HEADER));
    try {
      sk.loadFromArray(ctx.context, raw);
    } catch (cause) {
      sk.delete();
      throw new CryptoError('KEY_INVALID', 'CKKS secret key does not load under these parameters', { cause });
    } finally {
      raw.fill(0);
    }
    return new CkksKeyset(ctx, sk);
  }

  /**
   * Reads a key file written by {@link save}.
   *
   * @throws CryptoError `KEY_FILE_UNREADABLE`, `KEY_FILE_PERMISSIONS` (group or others may read it),
   *   `KEY_INVALID` or `CKKS_PARAMS_MISMATCH`.
   */
  static load(ctx: CkksContext, path: string): CkksKeyset {
    const bytes = readKeyFile(path, true);
    try {
      return CkksKeyset.import(ctx, bytes);
    } finally {
      bytes.fill(0);
    }
  }

  /** The secret key as bytes: 'CCK1' ‖ paramsId(32) ‖ SEAL secret key. Wipe it after use. */
  exportSecretKey(): Uint8Array {
    this.#assertLive();
    const raw = this.#secretKey.saveToArray(this.ctx.seal.ComprModeType.none) as Uint8Array;
    const out = new Uint8Array(HEADER + raw.length);
    out.set(MAGIC, 0);
    out.set(this.ctx.paramsId, MAGIC.length);
    out.set(raw, HEADER);
    raw.fill(0);
    return out;
  }

  /** Writes the secret key to `path` readable by the owner only (mode 0600). */
  save(path: string): void {
    const bytes = this.exportSecretKey();
    try {
      writeKeyFile(path, bytes, true);
    } finally {
      bytes.fill(0);
    }
  }

  /**
   * Encrypts one slot vector (length ≤ slots; integers |v| < 2^exactBits to decrypt exactly) and
   * returns the seeded serialized ciphertext at the last level.
   */
  encrypt(values: Float64Array): Uint8Array {
    this.#assertLive();
    const { seal, encoder, evaluator, lastParmsId, scale, slots } = this.ctx;
    if (values.length > slots) {
      throw new InvalidArgumentError(`slot vector length ${values.length}, ciphertext holds ${slots}`);
    }
    const plain = new seal.Plaintext();
    let ser: ReturnType<Encryptor['encryptSymmetricSerializable']> | undefined;
    try {
      encoder.encode(values, scale, plain);
      evaluator.plainModSwitchToInplace(plain, lastParmsId);
      ser = this.#encryptor.encryptSymmetricSerializable(plain);
      return new Uint8Array(ser.saveToArray(seal.ComprModeType.none) as Uint8Array);
    } finally {
      ser?.delete();
      plain.delete();
    }
  }

  /** Decrypts a ciphertext (serialized, or a loaded handle the caller keeps owning) to slot values. */
  decrypt(ciphertext: Uint8Array | SealCiphertext): Float64Array {
    this.#assertLive();
    const { seal, encoder } = this.ctx;
    const ct = ciphertext instanceof Uint8Array ? this.ctx.loadCiphertext(ciphertext) : ciphertext;
    const plain = new seal.Plaintext();
    try {
      this.#decryptor.decrypt(ct, plain);
      return Float64Array.from(encoder.decodeFloat64(plain) as Float64Array);
    } finally {
      plain.delete();
      if (ct !== ciphertext) ct.delete();
    }
  }

  /** Frees every SEAL object, the secret key included. */
  delete(): void {
    if (this.#deleted) return;
    this.#deleted = true;
    this.#decryptor.delete();
    this.#encryptor.delete();
    this.#publicKey.delete();
    this.#secretKey.delete();
  }

  #assertLive(): void {
    if (this.#deleted) throw new InvalidArgumentError('CKKS keyset used after delete()');
  }
}
