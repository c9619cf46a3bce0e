import { algorithmSpec } from './algorithm.ts';
import {
  assertBytes,
  assertKeyPairLengths,
  assertPublicKeyLength,
  type PublicSigningKey,
  type SigningKeyPair,
} from './signing-key.ts';
import { signingMessage } from './signing-message.ts';
import { rememberVerified, verificationKey, verifiedBefore, verifiedCacheEnabled } from './verified-cache.ts';

/**
 * Signs `signingMessage(domain, message)` with `key`, using noble's randomized (hedged) signing,
 * so two signatures of the same message differ. Falcon-512 signatures are variable-length
 * (at most 666 bytes); ML-DSA-65 signatures are 3309 bytes.
 *
 * @throws InvalidArgumentError on a bad domain or wrong key lengths.
 */
export function sign(key: SigningKeyPair, domain: string, message: Uint8Array): Uint8Array {
  assertKeyPairLengths(key);
  const bytes = signingMessage(domain, message);
  return algorithmSpec(key.algorithm).impl.sign(bytes, key.secretKey);
}

/**
 * Checks `signature` over `signingMessage(domain, message)` under `key`. A bad, truncated or
 * malformed signature returns `false`; it never throws for signature content. Where the process
 * turned the cache on (`enableVerifiedCache`, verified-cache.ts), a success is remembered and the
 * same bytes, key and signature are then answered without the lattice arithmetic.
 *
 * @throws InvalidArgumentError on a bad domain or a public key of the wrong length (a caller bug,
 *   not an attacker's input); CryptoError `SIGNATURE_ALGORITHM_UNKNOWN`.
 */
export function verify(
  key: PublicSigningKey,
  domain: string,
  message: Uint8Array,
  signature: Uint8Array,
): boolean {
  assertPublicKeyLength(key);
  assertBytes('signature', signature);
  const bytes = signingMessage(domain, message);
  const spec = algorithmSpec(key.algorithm);
  const cacheKey = verifiedCacheEnabled()
    ? verificationKey(key.algorithm, key.publicKey, signature, bytes)
    : undefined;
  if (cacheKey !== undefined && verifiedBefore(cacheKey)) return true;
  let ok: boolean;
  try {
    ok = spec.impl.verify(signature, bytes, key.publicKey);
  } catch {
    // noble throws on some malformed encodings; for a verifier that is just "not valid".
    return false;
  }
  if (ok && cacheKey !== undefined) rememberVerified(cacheKey);
  return ok;
}
