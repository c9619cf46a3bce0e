// Sealed envelopes (issue 22, break 9): a KEM envelope signed by its maker, stating the secret's
// fingerprint; the recipient checks context, maker, pin, signature, then opens and re-hashes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeEnvelopeStatement,
  encodeEnvelopeStatement,
  generateKemKeyPair,
  KEY_ENVELOPE_DOMAIN,
  openSealedEnvelope,
  readSealedEnvelope,
  sealEnvelope,
  secretFingerprint,
  wrapSecret,
} from '../../crypto/kem/index.ts';
import {
  generateSigningKeyPair,
  type PublicSigningKey,
  sign,
  toPublicSigningKey,
} from '../../crypto/signature/index.ts';
import { errorCode } from '../helpers/error-code.ts';

const seed = (n: number, v: number) => new Uint8Array(n).fill(v);
const recipient = generateKemKeyPair(seed(64, 1));
const maker = generateSigningKeyPair('falcon-512', seed(48, 2));
const other = generateSigningKeyPair('falcon-512', seed(48, 3));
const ctx = { federation: 'fed', recipient: 'site-2', purpose: 'federation-data-key' };
const secret = seed(32, 9);
const trusted = (key: PublicSigningKey) => (id: string, keyId: string) =>
  id === 'site-1' && keyId === key.keyId ? key : `${id} (${keyId}) is not trusted`;
const check = { makers: trusted(toPublicSigningKey(maker)) };

/** 'CSE1' framing of a statement, a signature and an inner envelope (to build forgeries). */
function frame(statement: Uint8Array, signature: Uint8Array, inner: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + 2 + statement.length + 2 + signature.length + inner.length);
  out.set(new TextEncoder().encode('CSE1'), 0);
  const view = new DataView(out.buffer);
  view.setUint16(4, statement.length);
  out.set(statement, 6);
  view.setUint16(6 + statement.length, signature.length);
  out.set(signature, 8 + statement.length);
  out.set(inner, 8 + statement.length + signature.length);
  return out;
}

describe('secretFingerprint', () => {
  it('is SHA-256 hex, separated by purpose and by secret', () => {
    const a = secretFingerprint('federation-data-key', secret);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(secretFingerprint('ckks-secret-key', secret)).not.toBe(a);
    expect(secretFingerprint('federation-data-key', seed(32, 8))).not.toBe(a);
    expect(secretFingerprint('federation-data-key', seed(32, 9))).toBe(a);
    expect(() => secretFingerprint('', secret)).toThrow(/purpose/);
    expect(() => secretFingerprint('p', new Uint8Array(0))).toThrow(/secret/);
  });
});

describe('envelope statements', () => {
  it('round-trip and keep field boundaries', () => {
    const text = fc.string({ minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(text, text, text, text, (federation, recipient, purpose, makerId) => {
        const s = {
          federation,
          recipient,
          purpose,
          maker: makerId,
          makerKeyId: 'k',
          fingerprint: 'f',
          envelopeDigest: seed(32, 4),
        };
        expect(decodeEnvelopeStatement(encodeEnvelopeStatement(s))).toEqual(s);
      }),
      { numRuns: 50 },
    );
    const bytes = encodeEnvelopeStatement({
      ...ctx,
      maker: 'm',
      makerKeyId: 'k',
      fingerprint: 'f',
      envelopeDigest: seed(32, 1),
    });
    expect(errorCode(() => decodeEnvelopeStatement(bytes.subarray(0, bytes.length - 1)))).toBe(
      'ENVELOPE_MALFORMED',
    );
    expect(errorCode(() => decodeEnvelopeStatement(new Uint8Array([...bytes, 0])))).toBe(
      'ENVELOPE_MALFORMED',
    );
  });
});

describe('sealEnvelope / openSealedEnvelope', () => {
  const sealed = sealEnvelope({ id: 'site-1', key: maker }, recipient.publicKey, secret, ctx);

  it('opens for the recipient under the trusted maker, with the stated fingerprint', () => {
    const opened = openSealedEnvelope(recipient.secretKey, sealed, ctx, {
      ...check,
      fingerprint: secretFingerprint(ctx.purpose, secret),
    });
    expect(opened.secret).toEqual(secret);
    expect(opened).toMatchObject({ maker: 'site-1', makerKeyId: maker.keyId });
    expect(readSealedEnvelope(sealed).statement).toMatchObject({
      ...ctx,
      maker: 'site-1',
      fingerprint: opened.fingerprint,
    });
  });

  it('refuses another context before anything else', () => {
    for (const field of ['federation', 'recipient', 'purpose'] as const) {
      expect(
        errorCode(() => openSealedEnvelope(recipient.secretKey, sealed, { ...ctx, [field]: 'x' }, check)),
      ).toBe('ENVELOPE_CONTEXT_MISMATCH');
    }
  });

  it('refuses a maker the recipient does not trust, and another pinned fingerprint', () => {
    const untrusted = { makers: trusted(toPublicSigningKey(other)) };
    expect(errorCode(() => openSealedEnvelope(recipient.secretKey, sealed, ctx, untrusted))).toBe(
      'ENVELOPE_MAKER_REFUSED',
    );
    expect(
      errorCode(() =>
        openSealedEnvelope(recipient.secretKey, sealed, ctx, { ...check, fingerprint: 'ab'.repeat(32) }),
      ),
    ).toBe('KEY_FINGERPRINT_MISMATCH');
  });

  it('refuses a bad signature: a forged one, an altered statement, altered wrapped bytes', () => {
    const parts = readSealedEnvelope(sealed);
    const forged = frame(
      parts.statementBytes,
      sign(other, KEY_ENVELOPE_DOMAIN, parts.statementBytes),
      parts.inner,
    );
    const otherDomain = frame(
      parts.statementBytes,
      sign(maker, 'registry', parts.statementBytes),
      parts.inner,
    );
    const inner = parts.inner.slice();
    inner[100]! ^= 1;
    const altered = frame(parts.statementBytes, parts.signature, inner);
    const reinner = frame(
      parts.statementBytes,
      parts.signature,
      wrapSecret(recipient.publicKey, seed(32, 5), ctx),
    );
    for (const bytes of [forged, otherDomain, altered, reinner]) {
      expect(errorCode(() => openSealedEnvelope(recipient.secretKey, bytes, ctx, check))).toBe(
        'ENVELOPE_SIGNATURE_INVALID',
      );
    }
  });

  it('refuses a secret whose fingerprint is not the one its maker signed', () => {
    const parts = readSealedEnvelope(sealed);
    const lying = encodeEnvelopeStatement({
      ...parts.statement,
      fingerprint: secretFingerprint(ctx.purpose, seed(32, 1)),
    });
    const bytes = frame(lying, sign(maker, KEY_ENVELOPE_DOMAIN, lying), parts.inner);
    expect(errorCode(() => openSealedEnvelope(recipient.secretKey, bytes, ctx, check))).toBe(
      'KEY_FINGERPRINT_MISMATCH',
    );
  });

  it('refuses a bare envelope as unsigned and junk as malformed', () => {
    const bare = wrapSecret(recipient.publicKey, secret, ctx);
    expect(errorCode(() => openSealedEnvelope(recipient.secretKey, bare, ctx, check))).toBe(
      'ENVELOPE_UNSIGNED',
    );
    expect(
      errorCode(() => openSealedEnvelope(recipient.secretKey, sealed.subarray(0, 200), ctx, check)),
    ).toBe('ENVELOPE_MALFORMED');
    expect(errorCode(() => openSealedEnvelope(recipient.secretKey, new Uint8Array(2000), ctx, check))).toBe(
      'ENVELOPE_MALFORMED',
    );
  });

  it('fails UNWRAP_FAILED under another recipient key', () => {
    const wrong = generateKemKeyPair(seed(64, 7));
    expect(errorCode(() => openSealedEnvelope(wrong.secretKey, sealed, ctx, check))).toBe('UNWRAP_FAILED');
  });
});
