import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import { assertLength, CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { bytesEqual } from '../digest/index.ts';

/** ML-KEM-768 (FIPS 203) byte lengths. */
export const ML_KEM_768 = Object.freeze({
  /** Encapsulation (public) key. */
  publicKeyBytes: 1184,
  /** Decapsulation (secret) key; it embeds the public key and its hash. */
  secretKeyBytes: 2400,
  /** KEM ciphertext. */
  cipherTextBytes: 1088,
  /** Key generation seed (d || z). */
  seedBytes: 64,
});

/** An ML-KEM-768 key pair. `secretKey` is secret: wipe it with {@link wipeKemKeyPair} when done. */
export interface KemKeyPair {
  /** 1184-byte encapsulation key; safe to publish. */
  readonly publicKey: Uint8Array;
  /** 2400-byte decapsulation key. */
  readonly secretKey: Uint8Array;
}

/** Throws `INVALID_ARGUMENT` unless `value` is a Uint8Array. */
export function assertBytes(name: string, value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${name} must be a Uint8Array`, { details: { name } });
  }
}

/**
 * Generates an ML-KEM-768 key pair. Without `seed`, noble draws fresh randomness; with it,
 * generation is deterministic (tests only: the seed is the whole secret). The caller keeps
 * ownership of `seed`.
 *
 * @param seed - 64 bytes (d || z, FIPS 203 ML-KEM.KeyGen_internal).
 * @throws InvalidArgumentError on a wrong seed length.
 */
export function generateKemKeyPair(seed?: Uint8Array): KemKeyPair {
  if (seed !== undefined) {
    assertBytes('seed', seed);
    assertLength('seed', seed.length, ML_KEM_768.seedBytes, 'ml-kem-768 expects');
  }
  return ml_kem768.keygen(seed);
}

/** Overwrites the secret key with zeros. */
export function wipeKemKeyPair(key: KemKeyPair): void {
  key.secretKey.fill(0);
}

/** Throws `INVALID_ARGUMENT` unless `publicKey` is a 1184-byte array. */
export function assertKemPublicKey(publicKey: Uint8Array): void {
  assertBytes('publicKey', publicKey);
  assertLength('publicKey', publicKey.length, ML_KEM_768.publicKeyBytes, 'ml-kem-768 expects');
}

/** Throws `INVALID_ARGUMENT` unless `secretKey` is a 2400-byte array. */
export function assertKemSecretKey(secretKey: Uint8Array): void {
  assertBytes('secretKey', secretKey);
  assertLength('secretKey', secretKey.length, ML_KEM_768.secretKeyBytes, 'ml-kem-768 expects');
}

/**
 * Public key embedded in a decapsulation key, after the FIPS 203 §7.3 hash check
 * (H(ek) stored in the key must match), which noble runs inside `decapsulate`.
 *
 * @throws CryptoError `KEY_INVALID` when the secret key fails the check.
 */
export function kemPublicKeyOf(secretKey: Uint8Array): Uint8Array {
  assertKemSecretKey(secretKey);
  try {
    const publicKey = ml_kem768.getPublicKey(secretKey);
    const { cipherText, sharedSecret } = ml_kem768.encapsulate(publicKey);
    const recovered = ml_kem768.decapsulate(cipherText, secretKey);
    const ok = bytesEqual(sharedSecret, recovered);
    sharedSecret.fill(0);
    recovered.fill(0);
    if (ok) return publicKey;
  } catch {
    // Fall through: noble throws 'hash check failed' for an inconsistent key.
  }
  throw new CryptoError('KEY_INVALID', 'ML-KEM-768 secret key failed its consistency check');
}

/**
 * Runs the FIPS 203 §7.2 encapsulation key check (every coefficient reduced mod q), which noble
 * performs inside `encapsulate`.
 *
 * @throws InvalidArgumentError on a wrong length; CryptoError `KEY_INVALID` when the check fails.
 */
export function assertKemPublicKeyValid(publicKey: Uint8Array): void {
  assertKemPublicKey(publicKey);
  let sharedSecret: Uint8Array;
  try {
    sharedSecret = ml_kem768.encapsulate(publicKey).sharedSecret;
  } catch (cause) {
    throw new CryptoError('KEY_INVALID', 'ML-KEM-768 public key failed the modulus check', { cause });
  }
  sharedSecret.fill(0);
}
