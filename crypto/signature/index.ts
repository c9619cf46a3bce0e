export { SIGNATURE_ALGORITHM_IDS, type SignatureAlgorithm, signatureAlgorithmFromId } from './algorithm.ts';
export { decodePublicKey, decodeSigningKeyPair, encodePublicKey, encodeSigningKeyPair } from './key-codec.ts';
export { loadPublicKey, loadSigningKeyPair, savePublicKey, saveSigningKeyPair } from './key-file.ts';
export { PUBLIC_KEY_FILE_MODE, SECRET_KEY_FILE_MODE } from './key-file-io.ts';
export { computeKeyId } from './key-id.ts';
export { sign, verify } from './sign.ts';
export {
  generateSigningKeyPair,
  type PublicSigningKey,
  type SigningKeyPair,
  toPublicSigningKey,
  wipeSigningKeyPair,
} from './signing-key.ts';
export { signingMessage } from './signing-message.ts';
export {
  enableVerifiedCache,
  resetVerifiedCache,
  VERIFIED_CACHE_SIZE,
  verifiedCacheEnabled,
} from './verified-cache.ts';
