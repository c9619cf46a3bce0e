import { InvalidArgumentError } from '../../src/errors/index.ts';

/**
 * What a wrapped secret is for. Every field is bound into the envelope (AEAD associated data and
 * key derivation), so an envelope opens only under the exact context it was made for.
 */
export interface WrapContext {
  /** Federation id. */
  readonly federation: string;
  /** Recipient site id. */
  readonly recipient: string;
  /** What the secret is, e.g. "ckks-secret-key" or "data-key". */
  readonly purpose: string;
}

const FIELDS = ['federation', 'recipient', 'purpose'] as const;
const MAX_FIELD_BYTES = 0xffff;

/**
 * Canonical bytes of `ctx`: for federation, recipient, purpose in that order,
 * uint16be(utf8 length) || utf8. Length prefixes keep ("ab","c") and ("a","bc") apart.
 *
 * @throws InvalidArgumentError when a field is not a non-empty string of at most 65535 UTF-8 bytes.
 */
export function canonicalWrapContext(ctx: WrapContext): Uint8Array {
  if (typeof ctx !== 'object' || ctx === null) {
    throw new InvalidArgumentError('ctx must be a WrapContext object', { details: { name: 'ctx' } });
  }
  const encoder = new TextEncoder();
  const encoded = FIELDS.map((field) => {
    const value: unknown = ctx[field];
    if (typeof value !== 'string' || value.length === 0) {
      throw new InvalidArgumentError(`ctx.${field} must be a non-empty string`, {
        details: { name: `ctx.${field}` },
      });
    }
    const bytes = encoder.encode(value);
    if (bytes.length > MAX_FIELD_BYTES) {
      throw new InvalidArgumentError(
        `ctx.${field} is ${bytes.length} UTF-8 bytes; at most ${MAX_FIELD_BYTES}`,
        {
          details: { name: `ctx.${field}`, actual: bytes.length },
        },
      );
    }
    return bytes;
  });
  const out = new Uint8Array(encoded.reduce((sum, bytes) => sum + 2 + bytes.length, 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const bytes of encoded) {
    view.setUint16(offset, bytes.length, false);
    out.set(bytes, offset + 2);
    offset += 2 + bytes.length;
  }
  return out;
}
