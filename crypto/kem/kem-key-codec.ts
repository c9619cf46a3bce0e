import { CryptoError } from '../../src/errors/index.ts';
import {
  assertBytes,
  assertKemPublicKey,
  assertKemPublicKeyValid,
  assertKemSecretKey,
  type KemKeyPair,
  kemPublicKeyOf,
  ML_KEM_768,
} from './kem-key-pair.ts';

/** One-byte id of ML-KEM-768 in key encodings, leaving room for other KEMs later. */
export const KEM_ALGORITHM_ID_ML_KEM_768 = 1;

const PUBLIC_MAGIC = new TextEncoder().encode('CKP1');
const PAIR_MAGIC = new TextEncoder().encode('CKS1');
const HEADER_BYTES = 5;

function encodeTagged(magic: Uint8Array, key: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER_BYTES + key.length);
  out.set(magic, 0);
  out[4] = KEM_ALGORITHM_ID_ML_KEM_768;
  out.set(key, HEADER_BYTES);
  return out;
}

/** Checks magic, algorithm id and length; returns a copy of the key bytes. */
function decodeTagged(bytes: Uint8Array, magic: Uint8Array, keyBytes: number, what: string): Uint8Array {
  assertBytes(what, bytes);
  if (bytes.length < HEADER_BYTES || !magic.every((b, i) => bytes[i] === b)) {
    throw new CryptoError(
      'KEY_INVALID',
      `${what} does not start with magic ${new TextDecoder().decode(magic)}`,
      {
        details: { what },
      },
    );
  }
  if (bytes[4] !== KEM_ALGORITHM_ID_ML_KEM_768) {
    throw new CryptoError('KEM_ALGORITHM_UNKNOWN', `${what}: KEM algorithm id ${bytes[4]} is unknown`, {
      details: { what, id: bytes[4] },
    });
  }
  const actual = bytes.length - HEADER_BYTES;
  if (actual !== keyBytes) {
    throw new CryptoError('KEY_INVALID', `${what}: key length ${actual}, ml-kem-768 expects ${keyBytes}`, {
      details: { what, actual, expected: keyBytes },
    });
  }
  return bytes.slice(HEADER_BYTES);
}

/**
 * Serializes an encapsulation key: 'CKP1' (4 bytes) || KEM id 1 (1 byte) || 1184-byte key.
 *
 * @throws InvalidArgumentError on a wrong key length.
 */
export function encodeKemPublicKey(publicKey: Uint8Array): Uint8Array {
  assertKemPublicKey(publicKey);
  return encodeTagged(PUBLIC_MAGIC, publicKey);
}

/**
 * Parses {@link encodeKemPublicKey} output (untrusted input) and runs the FIPS 203 modulus check.
 * The result shares no buffer with `bytes`.
 *
 * @throws CryptoError `KEY_INVALID` or `KEM_ALGORITHM_UNKNOWN`.
 */
export function decodeKemPublicKey(bytes: Uint8Array): Uint8Array {
  const publicKey = decodeTagged(bytes, PUBLIC_MAGIC, ML_KEM_768.publicKeyBytes, 'KEM public key encoding');
  assertKemPublicKeyValid(publicKey);
  return publicKey;
}

/**
 * Serializes a key pair: 'CKS1' (4 bytes) || KEM id 1 (1 byte) || 2400-byte decapsulation key.
 * The public key is not stored separately: FIPS 203 decapsulation keys embed it. The result holds
 * the secret key: the caller wipes it when done.
 *
 * @throws InvalidArgumentError on a wrong key length; CryptoError `KEY_INVALID` when the public key
 *   is not the one embedded in the secret key.
 */
export function encodeKemKeyPair(key: KemKeyPair): Uint8Array {
  assertKemPublicKey(key.publicKey);
  assertKemSecretKey(key.secretKey);
  const embedded = key.secretKey.subarray(
    ML_KEM_768.secretKeyBytes - 64 - ML_KEM_768.publicKeyBytes,
    ML_KEM_768.secretKeyBytes - 64,
  );
  if (Buffer.compare(embedded, key.publicKey) !== 0) {
    throw new CryptoError('KEY_INVALID', 'KEM public key does not match the one in the secret key');
  }
  return encodeTagged(PAIR_MAGIC, key.secretKey);
}

/**
 * Parses {@link encodeKemKeyPair} output, recovering the public key from the secret key and
 * checking the pair with an encapsulate/decapsulate round trip. The result shares no buffer
 * with `bytes`.
 *
 * @throws CryptoError `KEY_INVALID` or `KEM_ALGORITHM_UNKNOWN`.
 */
export function decodeKemKeyPair(bytes: Uint8Array): KemKeyPair {
  const secretKey = decodeTagged(bytes, PAIR_MAGIC, ML_KEM_768.secretKeyBytes, 'KEM key pair encoding');
  try {
    return { publicKey: kemPublicKeyOf(secretKey), secretKey };
  } catch (error) {
    secretKey.fill(0);
    throw error;
  }
}
