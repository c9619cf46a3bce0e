import { assertLength, InvalidArgumentError } from '../../src/errors/index.ts';
import { algorithmSpec, type SignatureAlgorithm } from './algorithm.ts';
import { computeKeyId } from './key-id.ts';

/** A verifying key tagged with its algorithm. */
export interface PublicSigningKey {
  /** Algorithm the key belongs to; a key is never used under another. */
  readonly algorithm: SignatureAlgorithm;
  /** Raw public key: 897 bytes for falcon-512, 1952 for ml-dsa-65. */
  readonly publicKey: Uint8Array;
  /** 32 hex characters derived from `algorithm` and `publicKey` (see `computeKeyId`). */
  readonly keyId: string;
}

/** A signing key pair. `secretKey` is secret: wipe it with {@link wipeSigningKeyPair} when done. */
export interface SigningKeyPair extends PublicSigningKey {
  /** Raw secret key: 1281 bytes for falcon-512, 4032 for ml-dsa-65. */
  readonly secretKey: Uint8Array;
}

/** Throws `INVALID_ARGUMENT` unless `value` is a Uint8Array. */
export function assertBytes(name: string, value: unknown): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new InvalidArgumentError(`${name} must be a Uint8Array`, { details: { name } });
  }
}

/**
 * Generates a key pair for `algorithm`. Without `seed`, noble draws fresh randomness; with it,
 * generation is deterministic (tests, reproducible fixtures). The caller keeps ownership of `seed`.
 *
 * @param seed - 48 bytes for falcon-512, 32 for ml-dsa-65.
 * @throws InvalidArgumentError on a wrong seed length; CryptoError `SIGNATURE_ALGORITHM_UNKNOWN`.
 */
export function generateSigningKeyPair(algorithm: SignatureAlgorithm, seed?: Uint8Array): SigningKeyPair {
  const spec = algorithmSpec(algorithm);
  if (seed !== undefined) {
    assertBytes('seed', seed);
    assertLength('seed', seed.length, spec.seedBytes, `${algorithm} expects`);
  }
  const { publicKey, secretKey } = spec.impl.keygen(seed);
  return { algorithm, publicKey, secretKey, keyId: computeKeyId(algorithm, publicKey) };
}

/** The public half of `key`, sharing no buffer with it. */
export function toPublicSigningKey(key: PublicSigningKey): PublicSigningKey {
  return { algorithm: key.algorithm, publicKey: Uint8Array.from(key.publicKey), keyId: key.keyId };
}

/** Overwrites the secret key with zeros. The pair cannot sign afterwards. */
export function wipeSigningKeyPair(key: SigningKeyPair): void {
  key.secretKey.fill(0);
}

/** Throws `INVALID_ARGUMENT` unless `key.publicKey` has the length its algorithm needs. */
export function assertPublicKeyLength(key: PublicSigningKey): void {
  const spec = algorithmSpec(key.algorithm);
  assertBytes('publicKey', key.publicKey);
  assertLength('publicKey', key.publicKey.length, spec.publicKeyBytes, `${key.algorithm} expects`);
}

/** Throws `INVALID_ARGUMENT` unless both halves of `key` have the lengths its algorithm needs. */
export function assertKeyPairLengths(key: SigningKeyPair): void {
  assertPublicKeyLength(key);
  const spec = algorithmSpec(key.algorithm);
  assertBytes('secretKey', key.secretKey);
  assertLength('secretKey', key.secretKey.length, spec.secretKeyBytes, `${key.algorithm} expects`);
}
