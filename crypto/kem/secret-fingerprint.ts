import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { assertBytes } from './kem-key-pair.ts';

/** Hash domain of a wrapped secret's fingerprint. */
export const SECRET_FINGERPRINT_DOMAIN = 'cohort/v1/secret-fingerprint';

/**
 * Fingerprint of a secret that envelopes carry (the CKKS secret key file's bytes, the federation
 * data key): SHA-256 over utf8(`cohort/v1/secret-fingerprint`) || 0x00 || uint16be(utf8 length of
 * `purpose`) || utf8(purpose) || secret, as 64 lowercase hex characters. The purpose keeps a
 * fingerprint of one kind of secret from matching another's. It reveals nothing usable about a
 * high-entropy secret (a preimage of SHA-256) and lets every site compare the secret it holds
 * with the one the federation pins (`members.keyFingerprints`).
 *
 * @throws InvalidArgumentError for an empty `secret` or `purpose`, or a purpose over 255 bytes.
 */
export function secretFingerprint(purpose: string, secret: Uint8Array): string {
  assertBytes('secret', secret);
  if (secret.length === 0) {
    throw new InvalidArgumentError('secret must not be empty', { details: { name: 'secret' } });
  }
  const label = new TextEncoder().encode(typeof purpose === 'string' ? purpose : '');
  if (label.length === 0 || label.length > 255) {
    throw new InvalidArgumentError('purpose must be a string of 1-255 UTF-8 bytes', {
      details: { name: 'purpose' },
    });
  }
  const length = new Uint8Array([label.length >> 8, label.length & 0xff]);
  return createHash('sha256')
    .update(SECRET_FINGERPRINT_DOMAIN)
    .update(new Uint8Array([0]))
    .update(length)
    .update(label)
    .update(secret)
    .digest('hex');
}
