import { createDecipheriv, hkdfSync } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../crypto/digest/index.ts';
import {
  canonicalWrapContext,
  decodeKemKeyPair,
  decodeKemPublicKey,
  encodeKemKeyPair,
  encodeKemPublicKey,
  generateKemKeyPair,
  type KemKeyPair,
  loadKemKeyPair,
  loadKemPublicKey,
  MIN_ENVELOPE_BYTES,
  saveKemKeyPair,
  saveKemPublicKey,
  unwrapSecret,
  type WrapContext,
  wipeKemKeyPair,
  wrapSecret,
} from '../../crypto/kem/index.ts';
import { CohortError, InvalidArgumentError } from '../../src/errors/index.ts';

const seedOf = (length: number, start = 0) => new Uint8Array(length).map((_, i) => (start + i) & 0xff);
const posix = process.platform !== 'win32';

function errorOf(fn: () => unknown): CohortError | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof CohortError) return error;
    throw error;
  }
  return undefined;
}
const codeOf = (fn: () => unknown) => errorOf(fn)?.code;

const alice = generateKemKeyPair(seedOf(64));
const bob = generateKemKeyPair(seedOf(64, 100));
const ctx: WrapContext = { federation: 'fed-heart', recipient: 'site-a', purpose: 'ckks-secret-key' };
const secret = seedOf(48, 7);

const dir = mkdtempSync(join(tmpdir(), 'cohort-kem-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('generateKemKeyPair', () => {
  it('pins the public key derived from a fixed seed (regression vector)', () => {
    expect(sha256Hex(alice.publicKey)).toBe(
      '0b7934c83125c788995e2ba6bd761e33046b3e40571be53e023309a29f398cc9',
    );
    expect(alice.publicKey).toHaveLength(1184);
    expect(alice.secretKey).toHaveLength(2400);
  });

  it('is deterministic with a seed and random without', () => {
    expect(generateKemKeyPair(seedOf(64)).secretKey).toEqual(alice.secretKey);
    expect(generateKemKeyPair().publicKey).not.toEqual(alice.publicKey);
  });

  it('validates the seed length', () => {
    expect(() => generateKemKeyPair(new Uint8Array(32))).toThrow('seed length 32, ml-kem-768 expects 64');
    expect(() => generateKemKeyPair(new Uint8Array(32))).toThrow(InvalidArgumentError);
  });

  it('wipes the secret key', () => {
    const kp = generateKemKeyPair();
    wipeKemKeyPair(kp);
    expect(kp.secretKey.every((x) => x === 0)).toBe(true);
  });
});

describe('canonicalWrapContext', () => {
  it('length-prefixes each field (uint16be) in federation, recipient, purpose order', () => {
    const bytes = canonicalWrapContext({ federation: 'ab', recipient: 'c', purpose: 'é' });
    expect(Buffer.from(bytes).toString('hex')).toBe('00026162' + '000163' + '0002c3a9');
  });

  it('keeps field boundaries apart', () => {
    const x = canonicalWrapContext({ federation: 'ab', recipient: 'c', purpose: 'p' });
    const y = canonicalWrapContext({ federation: 'a', recipient: 'bc', purpose: 'p' });
    expect(x).not.toEqual(y);
  });

  it('rejects empty, non-string and oversized fields', () => {
    expect(() => canonicalWrapContext({ ...ctx, recipient: '' })).toThrow(/ctx\.recipient/);
    expect(() => canonicalWrapContext({ ...ctx, purpose: 7 as unknown as string })).toThrow(
      InvalidArgumentError,
    );
    expect(() => canonicalWrapContext({ ...ctx, federation: 'x'.repeat(65_536) })).toThrow(
      InvalidArgumentError,
    );
    expect(() => canonicalWrapContext({ ...ctx, federation: 'x'.repeat(65_535) })).not.toThrow();
  });
});

describe('wrapSecret / unwrapSecret', () => {
  const envelope = wrapSecret(alice.publicKey, secret, ctx);

  it('round-trips and leaves the input secret untouched', () => {
    expect(unwrapSecret(alice.secretKey, envelope, ctx)).toEqual(secret);
    expect(secret).toEqual(seedOf(48, 7));
  });

  it('lays out CWE1 || kem ct (1088) || nonce (12) || body || tag (16)', () => {
    expect(new TextDecoder().decode(envelope.subarray(0, 4))).toBe('CWE1');
    expect(envelope).toHaveLength(4 + 1088 + 12 + secret.length + 16);
    expect(MIN_ENVELOPE_BYTES).toBe(1120);
  });

  it('derives the key and AAD exactly as specified (independent decryption)', () => {
    const kemCt = envelope.subarray(4, 1092);
    const nonce = envelope.subarray(1092, 1104);
    const body = envelope.subarray(1104, envelope.length - 16);
    const tag = envelope.subarray(envelope.length - 16);
    const shared = ml_kem768.decapsulate(kemCt, alice.secretKey);
    const ctxBytes = canonicalWrapContext(ctx);
    const info = Buffer.concat([Buffer.from('cohort/v1/wrap'), Buffer.of(0), ctxBytes]);
    const key = Buffer.from(hkdfSync('sha256', shared, kemCt, info, 32));
    const decipher = createDecipheriv('aes-256-gcm', key, nonce);
    decipher.setAAD(ctxBytes);
    decipher.setAuthTag(tag);
    const plain = Buffer.concat([decipher.update(body), decipher.final()]);
    expect(new Uint8Array(plain)).toEqual(secret);
  });

  it('uses a fresh KEM ciphertext and nonce each time', () => {
    const again = wrapSecret(alice.publicKey, secret, ctx);
    expect(again.subarray(4, 1104)).not.toEqual(envelope.subarray(4, 1104));
    expect(unwrapSecret(alice.secretKey, again, ctx)).toEqual(secret);
  });

  it('rejects a wrong recipient, federation or purpose with UNWRAP_FAILED', () => {
    for (const wrong of [
      { ...ctx, recipient: 'site-b' },
      { ...ctx, federation: 'fed-lung' },
      { ...ctx, purpose: 'data-key' },
    ]) {
      expect(codeOf(() => unwrapSecret(alice.secretKey, envelope, wrong))).toBe('UNWRAP_FAILED');
    }
  });

  it('rejects the wrong secret key with UNWRAP_FAILED', () => {
    expect(codeOf(() => unwrapSecret(bob.secretKey, envelope, ctx))).toBe('UNWRAP_FAILED');
  });

  it('rejects tampering in each region with UNWRAP_FAILED', () => {
    for (const index of [
      4,
      500,
      1091,
      1092,
      1103,
      1104,
      envelope.length - 17,
      envelope.length - 16,
      envelope.length - 1,
    ]) {
      const bad = envelope.slice();
      bad[index]! ^= 0x01;
      expect(codeOf(() => unwrapSecret(alice.secretKey, bad, ctx))).toBe('UNWRAP_FAILED');
    }
  });

  it('rejects any single flipped bit after the magic (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 32, max: envelope.length * 8 - 1 }), (bit) => {
        const bad = envelope.slice();
        bad[bit >> 3]! ^= 1 << (bit & 7);
        return codeOf(() => unwrapSecret(alice.secretKey, bad, ctx)) === 'UNWRAP_FAILED';
      }),
      { numRuns: 100 },
    );
  });

  it('names nothing secret in the failure', () => {
    const error = errorOf(() => unwrapSecret(bob.secretKey, envelope, ctx))!;
    expect(error.message).toBe('envelope could not be opened with this key and context');
    expect(error.details).toEqual({});
    expect(error.cause).toBeUndefined();
  });

  it('rejects wrong magic and short envelopes with ENVELOPE_MALFORMED', () => {
    const badMagic = envelope.slice();
    badMagic[0] = 0x58;
    expect(codeOf(() => unwrapSecret(alice.secretKey, badMagic, ctx))).toBe('ENVELOPE_MALFORMED');
    expect(codeOf(() => unwrapSecret(alice.secretKey, envelope.subarray(0, 1119), ctx))).toBe(
      'ENVELOPE_MALFORMED',
    );
    expect(codeOf(() => unwrapSecret(alice.secretKey, new Uint8Array(0), ctx))).toBe('ENVELOPE_MALFORMED');
    // Long enough but truncated body: framing is fine, authentication is not.
    expect(codeOf(() => unwrapSecret(alice.secretKey, envelope.subarray(0, envelope.length - 1), ctx))).toBe(
      'UNWRAP_FAILED',
    );
  });

  it('validates key lengths, the secret and ctx as contract violations', () => {
    expect(() => wrapSecret(new Uint8Array(12), secret, ctx)).toThrow(
      'publicKey length 12, ml-kem-768 expects 1184',
    );
    expect(() => unwrapSecret(new Uint8Array(12), envelope, ctx)).toThrow(InvalidArgumentError);
    expect(() => wrapSecret(alice.publicKey, new Uint8Array(0), ctx)).toThrow(InvalidArgumentError);
    expect(() => wrapSecret(alice.publicKey, secret, { ...ctx, federation: '' })).toThrow(
      InvalidArgumentError,
    );
  });

  it('rejects a public key that fails the FIPS 203 modulus check with KEY_INVALID', () => {
    const bad = alice.publicKey.slice();
    bad[0] = 0xff;
    bad[1] = 0xff;
    expect(codeOf(() => wrapSecret(bad, secret, ctx))).toBe('KEY_INVALID');
  });
});

describe('KEM key encoding and files', () => {
  it('round-trips public keys as CKP1 || 1 || key', () => {
    const bytes = encodeKemPublicKey(alice.publicKey);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('CKP1');
    expect(bytes[4]).toBe(1);
    expect(bytes).toHaveLength(5 + 1184);
    expect(decodeKemPublicKey(bytes)).toEqual(alice.publicKey);
  });

  it('round-trips key pairs as CKS1 || 1 || secret key, recovering the public key', () => {
    const bytes = encodeKemKeyPair(alice);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('CKS1');
    expect(bytes).toHaveLength(5 + 2400);
    expect(decodeKemKeyPair(bytes)).toEqual({ ...alice });
  });

  it('rejects mismatched halves, bad magic, wrong lengths and unknown ids', () => {
    const mixed: KemKeyPair = { publicKey: bob.publicKey, secretKey: alice.secretKey };
    expect(codeOf(() => encodeKemKeyPair(mixed))).toBe('KEY_INVALID');
    const pair = encodeKemKeyPair(alice);
    expect(codeOf(() => decodeKemPublicKey(pair))).toBe('KEY_INVALID');
    expect(codeOf(() => decodeKemKeyPair(pair.subarray(0, 2000)))).toBe('KEY_INVALID');
    const unknown = pair.slice();
    unknown[4] = 2;
    expect(codeOf(() => decodeKemKeyPair(unknown))).toBe('KEM_ALGORITHM_UNKNOWN');
    // Corrupt the embedded public key: the stored H(ek) no longer matches.
    const corrupt = pair.slice();
    corrupt[5 + 1152 + 10]! ^= 0x01;
    expect(codeOf(() => decodeKemKeyPair(corrupt))).toBe('KEY_INVALID');
  });

  it('saves the key pair with mode 0o600, also over an existing file, and loads it back', () => {
    const path = join(dir, 'alice.kem');
    writeFileSync(path, 'previous', { mode: 0o644 });
    chmodSync(path, 0o644);
    saveKemKeyPair(path, alice);
    if (posix) expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadKemKeyPair(path)).toEqual({ ...alice });
  });

  it.skipIf(!posix)('refuses a group-readable secret key file', () => {
    const path = join(dir, 'open.kem');
    saveKemKeyPair(path, alice);
    chmodSync(path, 0o640);
    expect(codeOf(() => loadKemKeyPair(path))).toBe('KEY_FILE_PERMISSIONS');
  });

  it('saves and loads public keys and reports missing files', () => {
    const path = join(dir, 'alice.kem.pub');
    saveKemPublicKey(path, alice.publicKey);
    expect(loadKemPublicKey(path)).toEqual(alice.publicKey);
    expect(codeOf(() => loadKemPublicKey(join(dir, 'absent.pub')))).toBe('KEY_FILE_UNREADABLE');
    expect(codeOf(() => loadKemKeyPair(join(dir, 'absent.kem')))).toBe('KEY_FILE_UNREADABLE');
  });
});
