import { sha256 } from '../digest/index.ts';
import { algorithmSpec, type SignatureAlgorithm } from './algorithm.ts';

const KEY_ID_LABEL = new TextEncoder().encode('cohort/v1/key-id');
const KEY_ID_BYTES = 16;

/**
 * Key id of a public key: the first 16 bytes, as 32 lowercase hex characters, of
 * SHA-256("cohort/v1/key-id" || 0x00 || algorithm id byte || publicKey). Binding the algorithm id
 * keeps the same bytes under two algorithms from sharing an id.
 */
export function computeKeyId(algorithm: SignatureAlgorithm, publicKey: Uint8Array): string {
  const { id } = algorithmSpec(algorithm);
  const digest = sha256(KEY_ID_LABEL, Uint8Array.of(0x00, id), publicKey);
  return Buffer.from(digest.subarray(0, KEY_ID_BYTES)).toString('hex');
}
