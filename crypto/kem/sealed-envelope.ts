import { createHash, timingSafeEqual } from 'node:crypto';
import { CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';
import { type PublicSigningKey, type SigningKeyPair, sign, verify } from '../signature/index.ts';
import {
  decodeEnvelopeStatement,
  type EnvelopeStatement,
  encodeEnvelopeStatement,
  KEY_ENVELOPE_DOMAIN,
} from './envelope-statement.ts';
import { assertBytes } from './kem-key-pair.ts';
import { secretFingerprint } from './secret-fingerprint.ts';
import { MIN_ENVELOPE_BYTES, unwrapSecret, wrapSecret } from './wrap.ts';
import type { WrapContext } from './wrap-context.ts';

/** Magic of a sealed envelope file ("Cohort Sealed Envelope", format 1). */
export const SEALED_ENVELOPE_MAGIC = 'CSE1';

/** Magic of a bare KEM envelope ({@link wrapSecret}): it says nothing of who made it. */
const BARE_ENVELOPE_MAGIC = 'CWE1';

const MAGIC = new TextEncoder().encode(SEALED_ENVELOPE_MAGIC);

/** Who makes an envelope: a member id and its signing key pair (the registry's key of that member). */
export interface EnvelopeMaker {
  readonly id: string;
  readonly key: SigningKeyPair;
}

/** A sealed envelope's parts, parsed, nothing verified. */
export interface SealedEnvelopeParts {
  readonly statement: EnvelopeStatement;
  /** The exact statement bytes the maker signed. */
  readonly statementBytes: Uint8Array;
  readonly signature: Uint8Array;
  /** The CWE1 envelope ({@link wrapSecret}) inside. */
  readonly inner: Uint8Array;
}

/**
 * Whom a recipient trusts to make its envelopes: `maker`'s public key `keyId`, or why `maker` may
 * not make one (not a member, not a site, revoked, an unknown key). Answers from what the
 * recipient already trusts (the pinned registry and the log's registry changes).
 */
export type EnvelopeMakerLookup = (maker: string, keyId: string) => PublicSigningKey | string;

/** What {@link openSealedEnvelope} checks an envelope against, besides its context. */
export interface EnvelopeCheck {
  readonly makers: EnvelopeMakerLookup;
  /** The fingerprint the federation pins for this secret ({@link secretFingerprint}), if any. */
  readonly fingerprint?: string | undefined;
}

/** An opened envelope: the secret (the caller wipes it), who made it and its fingerprint. */
export interface OpenedEnvelope {
  readonly secret: Uint8Array;
  readonly maker: string;
  readonly makerKeyId: string;
  readonly fingerprint: string;
}

const sha256 = (bytes: Uint8Array) => new Uint8Array(createHash('sha256').update(bytes).digest());

/**
 * Wraps `secret` for the holder of `recipientPublicKey` ({@link wrapSecret}, bound to `ctx`) and
 * seals it: the maker signs (domain {@link KEY_ENVELOPE_DOMAIN}) a statement of the federation,
 * recipient, purpose, its own id and key id, the secret's fingerprint and the SHA-256 of the
 * wrapped bytes. Layout: 'CSE1' || uint16be(statement length) || statement || uint16be(signature
 * length) || signature || CWE1 envelope. `secret` is not modified.
 *
 * @throws InvalidArgumentError on a bad key, secret, context or maker id; CryptoError `KEY_INVALID`
 *   when the recipient's public key fails the FIPS 203 check.
 */
export function sealEnvelope(
  maker: EnvelopeMaker,
  recipientPublicKey: Uint8Array,
  secret: Uint8Array,
  ctx: WrapContext,
): Uint8Array {
  if (typeof maker?.id !== 'string' || maker.id.length === 0 || maker.key === undefined) {
    throw new InvalidArgumentError('maker must name its id and signing key pair', {
      details: { name: 'maker' },
    });
  }
  const inner = wrapSecret(recipientPublicKey, secret, ctx);
  const statementBytes = encodeEnvelopeStatement({
    federation: ctx.federation,
    recipient: ctx.recipient,
    purpose: ctx.purpose,
    maker: maker.id,
    makerKeyId: maker.key.keyId,
    fingerprint: secretFingerprint(ctx.purpose, secret),
    envelopeDigest: sha256(inner),
  });
  const signature = sign(maker.key, KEY_ENVELOPE_DOMAIN, statementBytes);
  const out = new Uint8Array(MAGIC.length + 2 + statementBytes.length + 2 + signature.length + inner.length);
  const view = new DataView(out.buffer);
  let offset = 0;
  out.set(MAGIC, offset);
  offset += MAGIC.length;
  view.setUint16(offset, statementBytes.length, false);
  out.set(statementBytes, offset + 2);
  offset += 2 + statementBytes.length;
  view.setUint16(offset, signature.length, false);
  out.set(signature, offset + 2);
  offset += 2 + signature.length;
  out.set(inner, offset);
  return out;
}

/**
 * Splits a sealed envelope into its parts (untrusted; nothing verified).
 *
 * @throws CryptoError `ENVELOPE_UNSIGNED` for a bare CWE1 envelope (anyone who knows the
 *   recipient's public KEM key can make one); `ENVELOPE_MALFORMED` otherwise.
 */
export function readSealedEnvelope(bytes: Uint8Array): SealedEnvelopeParts {
  assertBytes('envelope', bytes);
  const magic = String.fromCharCode(...bytes.subarray(0, 4));
  if (magic === BARE_ENVELOPE_MAGIC) {
    throw new CryptoError(
      'ENVELOPE_UNSIGNED',
      'a bare CWE1 envelope, signed by no one: anyone who knows the public KEM key can make one (re-wrap it with `cohort keys … wrap --signer <site> --signing-key <file>`)',
    );
  }
  const malformed = (why: string) =>
    new CryptoError('ENVELOPE_MALFORMED', `not a ${SEALED_ENVELOPE_MAGIC} envelope: ${why}`, {
      details: { length: bytes.length, why },
    });
  if (magic !== SEALED_ENVELOPE_MAGIC) throw malformed('wrong magic');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = MAGIC.length;
  if (offset + 2 > bytes.length) throw malformed('truncated');
  const statementLength = view.getUint16(offset, false);
  offset += 2;
  if (offset + statementLength + 2 > bytes.length) throw malformed('truncated');
  const statementBytes = bytes.slice(offset, offset + statementLength);
  offset += statementLength;
  const signatureLength = view.getUint16(offset, false);
  offset += 2;
  if (offset + signatureLength + MIN_ENVELOPE_BYTES > bytes.length) throw malformed('truncated');
  const signature = bytes.slice(offset, offset + signatureLength);
  const inner = bytes.slice(offset + signatureLength);
  return { statement: decodeEnvelopeStatement(statementBytes), statementBytes, signature, inner };
}

/** Constant-time comparison of two hex fingerprints (lowercased). */
function sameFingerprint(a: string, b: string): boolean {
  const x = Buffer.from(a.toLowerCase());
  const y = Buffer.from(b.toLowerCase());
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Checks a sealed envelope ({@link sealEnvelope}) for `ctx` without opening it, cheapest check
 * first: the statement names `ctx`'s federation, recipient and purpose
 * (`ENVELOPE_CONTEXT_MISMATCH`); `check.makers` accepts its maker and key
 * (`ENVELOPE_MAKER_REFUSED`, with the lookup's reason); the pinned fingerprint, if any, is the
 * stated one (`KEY_FINGERPRINT_MISMATCH`); the maker's signature verifies over the statement and
 * the wrapped bytes hash to it (`ENVELOPE_SIGNATURE_INVALID`). Anyone can run it (no secret key):
 * a store that checks envelopes on intake leaves a recipient only the faults of the maker itself.
 *
 * @returns the envelope's parts, verified.
 * @throws CryptoError as listed, `ENVELOPE_UNSIGNED` or `ENVELOPE_MALFORMED` ({@link readSealedEnvelope}).
 */
export function verifySealedEnvelope(
  bytes: Uint8Array,
  ctx: WrapContext,
  check: EnvelopeCheck,
): SealedEnvelopeParts {
  if (typeof check?.makers !== 'function') {
    throw new InvalidArgumentError('check.makers must be a function', { details: { name: 'check.makers' } });
  }
  const parts = readSealedEnvelope(bytes);
  const s = parts.statement;
  for (const field of ['federation', 'recipient', 'purpose'] as const) {
    if (s[field] !== ctx[field]) {
      throw new CryptoError(
        'ENVELOPE_CONTEXT_MISMATCH',
        `the envelope is for ${field} ${JSON.stringify(s[field])}, expected ${JSON.stringify(ctx[field])}`,
        { details: { field, stated: s[field], expected: ctx[field] } },
      );
    }
  }
  const key = check.makers(s.maker, s.makerKeyId);
  if (typeof key === 'string') {
    throw new CryptoError(
      'ENVELOPE_MAKER_REFUSED',
      `the envelope was made by ${JSON.stringify(s.maker)} (key ${s.makerKeyId}), who may not make it: ${key}`,
      { details: { maker: s.maker, makerKeyId: s.makerKeyId } },
    );
  }
  if (check.fingerprint !== undefined && !sameFingerprint(s.fingerprint, check.fingerprint)) {
    throw fingerprintMismatch(s.fingerprint, check.fingerprint, 'the federation pins');
  }
  if (
    key.keyId !== s.makerKeyId ||
    !sameDigest(sha256(parts.inner), s.envelopeDigest) ||
    !verify(key, KEY_ENVELOPE_DOMAIN, parts.statementBytes, parts.signature)
  ) {
    throw new CryptoError(
      'ENVELOPE_SIGNATURE_INVALID',
      `the signature of ${JSON.stringify(s.maker)} (key ${s.makerKeyId}) does not verify over the envelope`,
      { details: { maker: s.maker, makerKeyId: s.makerKeyId } },
    );
  }
  return parts;
}

/**
 * Opens a sealed envelope ({@link sealEnvelope}) for `ctx`: {@link verifySealedEnvelope}, then the
 * KEM envelope opens under the recipient's key and `ctx` (`UNWRAP_FAILED`), and the secret's
 * fingerprint is the stated one (`KEY_FINGERPRINT_MISMATCH`).
 *
 * @returns the secret (the caller wipes it), its maker and fingerprint.
 * @throws CryptoError as listed and as {@link verifySealedEnvelope}.
 */
export function openSealedEnvelope(
  recipientSecretKey: Uint8Array,
  bytes: Uint8Array,
  ctx: WrapContext,
  check: EnvelopeCheck,
): OpenedEnvelope {
  const parts = verifySealedEnvelope(bytes, ctx, check);
  const s = parts.statement;
  const secret = unwrapSecret(recipientSecretKey, parts.inner, ctx);
  const fingerprint = secretFingerprint(ctx.purpose, secret);
  if (!sameFingerprint(fingerprint, s.fingerprint)) {
    secret.fill(0);
    throw fingerprintMismatch(fingerprint, s.fingerprint, `its maker ${JSON.stringify(s.maker)} stated`);
  }
  return { secret, maker: s.maker, makerKeyId: s.makerKeyId, fingerprint };
}

function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function fingerprintMismatch(actual: string, expected: string, whose: string): CryptoError {
  return new CryptoError(
    'KEY_FINGERPRINT_MISMATCH',
    `the envelope's secret has fingerprint ${actual}; ${whose} ${expected.toLowerCase()}`,
    { details: { actual, expected: expected.toLowerCase() } },
  );
}
