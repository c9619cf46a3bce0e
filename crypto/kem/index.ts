export {
  decodeEnvelopeStatement,
  type EnvelopeStatement,
  encodeEnvelopeStatement,
  KEY_ENVELOPE_DOMAIN,
} from './envelope-statement.ts';
export {
  decodeKemKeyPair,
  decodeKemPublicKey,
  encodeKemKeyPair,
  encodeKemPublicKey,
  KEM_ALGORITHM_ID_ML_KEM_768,
} from './kem-key-codec.ts';
export { loadKemKeyPair, loadKemPublicKey, saveKemKeyPair, saveKemPublicKey } from './kem-key-file.ts';
export { generateKemKeyPair, type KemKeyPair, ML_KEM_768, wipeKemKeyPair } from './kem-key-pair.ts';
export {
  type EnvelopeCheck,
  type EnvelopeMaker,
  type EnvelopeMakerLookup,
  type OpenedEnvelope,
  openSealedEnvelope,
  readSealedEnvelope,
  SEALED_ENVELOPE_MAGIC,
  type SealedEnvelopeParts,
  sealEnvelope,
  verifySealedEnvelope,
} from './sealed-envelope.ts';
export { SECRET_FINGERPRINT_DOMAIN, secretFingerprint } from './secret-fingerprint.ts';
export { MIN_ENVELOPE_BYTES, unwrapSecret, wrapSecret } from './wrap.ts';
export { canonicalWrapContext, type WrapContext } from './wrap-context.ts';
