import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { assertBytes, assertKemPublicKey, assertKemSecretKey, ML_KEM_768 } from './kem-key-pair.ts';
import { canonicalWrapContext, type WrapContext } from './wrap-context.ts';

const MAGIC = new TextEncoder().encode('CWE1');
const INFO_LABEL = new TextEncoder().encode('cohort/v1/wrap');
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const CT_OFFSET = MAGIC.length;
const NONCE_OFFSET = CT_OFFSET + ML_KEM_768.cipherTextBytes;
const BODY_OFFSET = NONCE_OFFSET + NONCE_BYTES;

/** Smallest possible envelope: header, KEM ciphertext, nonce and tag around an empty body (1120 bytes). */
export const MIN_ENVELOPE_BYTES = BODY_OFFSET + TAG_BYTES;

/** AES-256 key = HKDF-SHA256(ikm = KEM shared secret, salt = KEM ciphertext, info = label || 0x00 || ctx). */
function deriveKey(sharedSecret: Uint8Array, kemCipherText: Uint8Array, ctxBytes: Uint8Array): Uint8Array {
  const info = new Uint8Array(INFO_LABEL.length + 1 + ctxBytes.length);
  info.set(INFO_LABEL, 0);
  info.set(ctxBytes, INFO_LABEL.length + 1);
  return new Uint8Array(hkdfSync('sha256', sharedSecret, kemCipherText, info, KEY_BYTES));
}

/**
 * Wraps `secret` for the holder of the ML-KEM-768 key behind `recipientPublicKey`, bound to `ctx`.
 * Envelope layout: 'CWE1' (4) || ML-KEM-768 ciphertext (1088) || AES-GCM nonce (12, random) ||
 * AES-256-GCM ciphertext (secret.length) || tag (16); total `secret.length + 1120` bytes.
 * The AES key comes from HKDF-SHA256 over the KEM shared secret (salt: the KEM ciphertext; info:
 * "cohort/v1/wrap" || 0x00 || canonical ctx) and the canonical ctx is the AEAD associated data.
 * `secret` is not modified.
 *
 * @throws InvalidArgumentError on a wrong key length, an empty secret or a bad ctx;
 *   CryptoError `KEY_INVALID` when the public key fails the FIPS 203 modulus check.
 */
export function wrapSecret(recipientPublicKey: Uint8Array, secret: Uint8Array, ctx: WrapContext): Uint8Array {
  assertKemPublicKey(recipientPublicKey);
  assertBytes('secret', secret);
  if (secret.length === 0) {
    throw new InvalidArgumentError('secret length 0, expects at least 1', { details: { name: 'secret' } });
  }
  const ctxBytes = canonicalWrapContext(ctx);
  let encapsulated: { cipherText: Uint8Array; sharedSecret: Uint8Array };
  try {
    encapsulated = ml_kem768.encapsulate(recipientPublicKey);
  } catch (cause) {
    throw new CryptoError('KEY_INVALID', 'recipient ML-KEM-768 public key failed the modulus check', {
      cause,
    });
  }
  const { cipherText: kemCipherText, sharedSecret } = encapsulated;
  const key = deriveKey(sharedSecret, kemCipherText, ctxBytes);
  sharedSecret.fill(0);
  try {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(ctxBytes);
    const body = cipher.update(secret);
    const final = cipher.final();
    const tag = cipher.getAuthTag();
    const envelope = new Uint8Array(BODY_OFFSET + body.length + final.length + TAG_BYTES);
    envelope.set(MAGIC, 0);
    envelope.set(kemCipherText, CT_OFFSET);
    envelope.set(nonce, NONCE_OFFSET);
    envelope.set(body, BODY_OFFSET);
    envelope.set(final, BODY_OFFSET + body.length);
    envelope.set(tag, envelope.length - TAG_BYTES);
    return envelope;
  } finally {
    key.fill(0);
  }
}

/**
 * Opens an envelope made by {@link wrapSecret} with the recipient's ML-KEM-768 secret key, under
 * the same `ctx`. Every failure after framing (tampering, wrong key, wrong federation, recipient
 * or purpose) is the same `UNWRAP_FAILED`, saying nothing about which check failed.
 *
 * @returns the secret; the caller owns and wipes it.
 * @throws CryptoError `ENVELOPE_MALFORMED` (wrong magic or too short) or `UNWRAP_FAILED`;
 *   InvalidArgumentError on a wrong secret key length or a bad ctx.
 */
export function unwrapSecret(
  recipientSecretKey: Uint8Array,
  envelope: Uint8Array,
  ctx: WrapContext,
): Uint8Array {
  assertKemSecretKey(recipientSecretKey);
  assertBytes('envelope', envelope);
  const ctxBytes = canonicalWrapContext(ctx);
  if (envelope.length < MIN_ENVELOPE_BYTES || !MAGIC.every((b, i) => envelope[i] === b)) {
    throw new CryptoError(
      'ENVELOPE_MALFORMED',
      `envelope of ${envelope.length} bytes is not a CWE1 envelope (at least ${MIN_ENVELOPE_BYTES} bytes)`,
      { details: { length: envelope.length } },
    );
  }
  const kemCipherText = envelope.subarray(CT_OFFSET, NONCE_OFFSET);
  const nonce = envelope.subarray(NONCE_OFFSET, BODY_OFFSET);
  const body = envelope.subarray(BODY_OFFSET, envelope.length - TAG_BYTES);
  const tag = envelope.subarray(envelope.length - TAG_BYTES);
  let sharedSecret: Uint8Array;
  try {
    // ML-KEM rejects implicitly: a tampered ciphertext yields an unrelated secret, caught by GCM below.
    sharedSecret = ml_kem768.decapsulate(kemCipherText, recipientSecretKey);
  } catch {
    throw unwrapFailed();
  }
  const key = deriveKey(sharedSecret, kemCipherText, ctxBytes);
  sharedSecret.fill(0);
  let plain: Buffer | undefined;
  let final: Buffer | undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(ctxBytes);
    decipher.setAuthTag(tag);
    plain = decipher.update(body);
    final = decipher.final();
  } catch {
    // GCM releases plaintext before the tag is checked; never let unauthenticated bytes linger.
    plain?.fill(0);
    throw unwrapFailed();
  } finally {
    key.fill(0);
  }
  const secret = new Uint8Array(plain.length + final.length);
  secret.set(plain, 0);
  secret.set(final, plain.length);
  plain.fill(0);
  final.fill(0);
  return secret;
}

function unwrapFailed(): CryptoError {
  return new CryptoError('UNWRAP_FAILED', 'envelope could not be opened with this key and context');
}
