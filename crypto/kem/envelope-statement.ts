import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';

/** Signature domain of an envelope's statement: its maker's signature over {@link encodeEnvelopeStatement}. */
export const KEY_ENVELOPE_DOMAIN = 'key-envelope';

/**
 * What the maker of a sealed envelope states and signs: who made it, for whom, for what, and what
 * it holds. Every field is bound by the signature; the recipient checks each against what it
 * expects before opening anything.
 */
export interface EnvelopeStatement {
  readonly federation: string;
  /** The recipient site. */
  readonly recipient: string;
  /** What the secret is ({@link WrapContext.purpose}). */
  readonly purpose: string;
  /** The member that made and signed the envelope (the site that holds the secret). */
  readonly maker: string;
  /** The key id of the maker's signing key that signed it. */
  readonly makerKeyId: string;
  /** {@link secretFingerprint} of the wrapped secret (64 lowercase hex characters). */
  readonly fingerprint: string;
  /** SHA-256 of the inner CWE1 envelope (the KEM-wrapped secret): the signature covers its bytes. */
  readonly envelopeDigest: Uint8Array;
}

const TEXT_FIELDS = ['federation', 'recipient', 'purpose', 'maker', 'makerKeyId', 'fingerprint'] as const;
const MAX_FIELD_BYTES = 0xffff;
const DIGEST_BYTES = 32;

/**
 * Canonical bytes of `s`: for federation, recipient, purpose, maker, makerKeyId, fingerprint in that
 * order uint16be(utf8 length) || utf8, then uint16be(32) || envelopeDigest. Length prefixes keep
 * ("ab","c") and ("a","bc") apart.
 *
 * @throws InvalidArgumentError when a field is empty, too long, or the digest is not 32 bytes.
 */
export function encodeEnvelopeStatement(s: EnvelopeStatement): Uint8Array {
  const encoder = new TextEncoder();
  const parts: Uint8Array[] = TEXT_FIELDS.map((field) => {
    const value: unknown = s?.[field];
    if (typeof value !== 'string' || value.length === 0) {
      throw new InvalidArgumentError(`statement.${field} must be a non-empty string`, {
        details: { name: `statement.${field}` },
      });
    }
    const bytes = encoder.encode(value);
    if (bytes.length > MAX_FIELD_BYTES) {
      throw new InvalidArgumentError(`statement.${field} is over ${MAX_FIELD_BYTES} bytes`, {
        details: { name: `statement.${field}` },
      });
    }
    return bytes;
  });
  if (!(s.envelopeDigest instanceof Uint8Array) || s.envelopeDigest.length !== DIGEST_BYTES) {
    throw new InvalidArgumentError('statement.envelopeDigest must be 32 bytes', {
      details: { name: 'statement.envelopeDigest' },
    });
  }
  parts.push(s.envelopeDigest);
  const out = new Uint8Array(parts.reduce((n, p) => n + 2 + p.length, 0));
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const p of parts) {
    view.setUint16(offset, p.length, false);
    out.set(p, offset + 2);
    offset += 2 + p.length;
  }
  return out;
}

/**
 * Parses {@link encodeEnvelopeStatement} output (untrusted: nothing is verified here).
 *
 * @throws CryptoError `ENVELOPE_MALFORMED` for bytes that are not a statement.
 */
export function decodeEnvelopeStatement(bytes: Uint8Array): EnvelopeStatement {
  const malformed = (why: string) =>
    new CryptoError('ENVELOPE_MALFORMED', `envelope statement: ${why}`, { details: { why } });
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const fields: Uint8Array[] = [];
  let offset = 0;
  for (let i = 0; i <= TEXT_FIELDS.length; i++) {
    if (offset + 2 > bytes.length) throw malformed('truncated');
    const length = view.getUint16(offset, false);
    if (offset + 2 + length > bytes.length) throw malformed('truncated');
    fields.push(bytes.subarray(offset + 2, offset + 2 + length));
    offset += 2 + length;
  }
  if (offset !== bytes.length) throw malformed('trailing bytes');
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const text: string[] = [];
  for (const [i, f] of fields.slice(0, TEXT_FIELDS.length).entries()) {
    try {
      text.push(decoder.decode(f));
    } catch {
      throw malformed(`${TEXT_FIELDS[i]} is not UTF-8`);
    }
    if (f.length === 0) throw malformed(`${TEXT_FIELDS[i]} is empty`);
  }
  const digest = fields[TEXT_FIELDS.length]!;
  if (digest.length !== DIGEST_BYTES) throw malformed('the envelope digest is not 32 bytes');
  const [federation, recipient, purpose, maker, makerKeyId, fingerprint] = text as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    federation,
    recipient,
    purpose,
    maker,
    makerKeyId,
    fingerprint,
    envelopeDigest: digest.slice(),
  };
}
