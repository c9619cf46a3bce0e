import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import { expandPoly, type RnsPoly, type RnsShape } from './rns-poly.ts';

const DOMAIN = 'cohort/v1/threshold-crp\0';

/**
 * The common random polynomial `a` of one ciphertext position: uniform in R_Q, expanded with
 * SHAKE-256 from the key epoch's id (which the signed log records), a label naming what the
 * position belongs to (`round:<id>`, `public-share`) and the position's index (the block).
 *
 * Every site encrypting at the same position uses the same `a`, so ciphertexts add component by
 * component and only their first polynomial travels. The one rule that keeps this secure: a site
 * never encrypts two different messages at one position (same epoch, label and index), since the
 * difference of two such ciphertexts is the difference of the messages plus small noise.
 */
export function commonRandomPoly(
  shape: RnsShape,
  epochId: Uint8Array,
  label: string,
  index: number,
): RnsPoly {
  if (!(epochId instanceof Uint8Array) || epochId.length !== 32) {
    throw new InvalidArgumentError('epochId must be 32 bytes');
  }
  // 1,024 covers every payload label: `update:` + a 63-character federation + a round + a 64-byte
  // attempt in hex is at most 217.
  if (typeof label !== 'string' || label.length === 0 || label.length > 1024 || label.includes('\0')) {
    throw new InvalidArgumentError(
      `label must be 1 to 1,024 characters without NUL, got ${JSON.stringify(label.slice?.(0, 64) ?? label)}`,
    );
  }
  if (!Number.isInteger(index) || index < 0 || index > 0xffff_ffff) {
    throw new InvalidArgumentError(`index must be an integer in [0, 2^32), got ${index}`);
  }
  const i = new Uint8Array(4);
  new DataView(i.buffer).setUint32(0, index);
  const seed = createHash('sha256')
    .update(DOMAIN)
    .update(epochId)
    .update(label)
    .update('\0')
    .update(i)
    .digest();
  return expandPoly(shape, new Uint8Array(seed));
}
