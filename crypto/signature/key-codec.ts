import { CryptoError } from '../../src/errors/index.ts';
import { algorithmSpec, SIGNATURE_ALGORITHM_IDS, signatureAlgorithmFromId } from './algorithm.ts';
import { computeKeyId } from './key-id.ts';
import {
  assertBytes,
  assertKeyPairLengths,
  assertPublicKeyLength,
  type PublicSigningKey,
  type SigningKeyPair,
} from './signing-key.ts';

const PUBLIC_MAGIC = new TextEncoder().encode('CPK1');
const PAIR_MAGIC = new TextEncoder().encode('CSK1');
const HEADER_BYTES = 5;

function encodeTagged(magic: Uint8Array, algorithmId: number, parts: readonly Uint8Array[]): Uint8Array {
  const length = parts.reduce((sum, part) => sum + part.length, HEADER_BYTES);
  const out = new Uint8Array(length);
  out.set(magic, 0);
  out[4] = algorithmId;
  let offset = HEADER_BYTES;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function keyInvalid(message: string, details: Record<string, unknown>): CryptoError {
  return new CryptoError('KEY_INVALID', message, { details });
}

/** Checks magic and returns the algorithm named by the header. */
function decodeHeader(bytes: Uint8Array, magic: Uint8Array, what: string) {
  assertBytes(what, bytes);
  if (bytes.length < HEADER_BYTES || !magic.every((b, i) => bytes[i] === b)) {
    throw keyInvalid(`${what} does not start with magic ${new TextDecoder().decode(magic)}`, { what });
  }
  return signatureAlgorithmFromId(bytes[4]!);
}

/**
 * Serializes a public key: 'CPK1' (4 bytes) || algorithm id (1 byte) || raw public key.
 *
 * @throws InvalidArgumentError when the key length does not fit its algorithm.
 */
export function encodePublicKey(key: PublicSigningKey): Uint8Array {
  assertPublicKeyLength(key);
  return encodeTagged(PUBLIC_MAGIC, SIGNATURE_ALGORITHM_IDS[key.algorithm], [key.publicKey]);
}

/**
 * Parses {@link encodePublicKey} output (untrusted input) and recomputes the key id.
 * The returned key shares no buffer with `bytes`.
 *
 * @throws CryptoError `KEY_INVALID` (bad magic or length) or `SIGNATURE_ALGORITHM_UNKNOWN`.
 */
export function decodePublicKey(bytes: Uint8Array): PublicSigningKey {
  const algorithm = decodeHeader(bytes, PUBLIC_MAGIC, 'public key encoding');
  const spec = algorithmSpec(algorithm);
  const keyBytes = bytes.length - HEADER_BYTES;
  if (keyBytes !== spec.publicKeyBytes) {
    throw keyInvalid(`publicKey length ${keyBytes}, ${algorithm} expects ${spec.publicKeyBytes}`, {
      algorithm,
      actual: keyBytes,
      expected: spec.publicKeyBytes,
    });
  }
  const publicKey = bytes.slice(HEADER_BYTES);
  return { algorithm, publicKey, keyId: computeKeyId(algorithm, publicKey) };
}

/**
 * Serializes a key pair: 'CSK1' (4 bytes) || algorithm id (1 byte) || public key || secret key.
 * The result holds the secret key: the caller wipes it when done.
 *
 * @throws InvalidArgumentError when a key length does not fit its algorithm.
 */
export function encodeSigningKeyPair(key: SigningKeyPair): Uint8Array {
  assertKeyPairLengths(key);
  return encodeTagged(PAIR_MAGIC, SIGNATURE_ALGORITHM_IDS[key.algorithm], [key.publicKey, key.secretKey]);
}

/**
 * Parses {@link encodeSigningKeyPair} output. Checks structure only; `loadSigningKeyPair` also
 * checks that the halves belong together. The returned keys share no buffer with `bytes`.
 *
 * @throws CryptoError `KEY_INVALID` (bad magic or length) or `SIGNATURE_ALGORITHM_UNKNOWN`.
 */
export function decodeSigningKeyPair(bytes: Uint8Array): SigningKeyPair {
  const algorithm = decodeHeader(bytes, PAIR_MAGIC, 'key pair encoding');
  const spec = algorithmSpec(algorithm);
  const expected = spec.publicKeyBytes + spec.secretKeyBytes;
  const keyBytes = bytes.length - HEADER_BYTES;
  if (keyBytes !== expected) {
    throw keyInvalid(`key pair length ${keyBytes}, ${algorithm} expects ${expected}`, {
      algorithm,
      actual: keyBytes,
      expected,
    });
  }
  const split = HEADER_BYTES + spec.publicKeyBytes;
  const publicKey = bytes.slice(HEADER_BYTES, split);
  const secretKey = bytes.slice(split);
  return { algorithm, publicKey, secretKey, keyId: computeKeyId(algorithm, publicKey) };
}
