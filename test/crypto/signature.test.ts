import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { falcon512 } from '@noble/post-quantum/falcon.js';
import { ml_dsa65 } from '@noble/post-quantum/ml-dsa.js';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../crypto/digest/index.ts';
import {
  computeKeyId,
  decodePublicKey,
  decodeSigningKeyPair,
  encodePublicKey,
  encodeSigningKeyPair,
  generateSigningKeyPair,
  loadPublicKey,
  loadSigningKeyPair,
  SIGNATURE_ALGORITHM_IDS,
  type SignatureAlgorithm,
  type SigningKeyPair,
  savePublicKey,
  saveSigningKeyPair,
  sign,
  signatureAlgorithmFromId,
  signingMessage,
  toPublicSigningKey,
  verify,
  wipeSigningKeyPair,
} from '../../crypto/signature/index.ts';
import { CohortError, CryptoError, InvalidArgumentError } from '../../src/errors/index.ts';

const utf8 = (s: string) => new TextEncoder().encode(s);
const seedOf = (length: number, start = 0) => new Uint8Array(length).map((_, i) => (start + i) & 0xff);
const posix = process.platform !== 'win32';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof CohortError ? error.code : `not a CohortError: ${String(error)}`;
  }
  return undefined;
}

function errorOf(fn: () => unknown): CohortError | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof CohortError) return error;
    throw error;
  }
  return undefined;
}

const SEED_BYTES: Record<SignatureAlgorithm, number> = { 'falcon-512': 48, 'ml-dsa-65': 32 };
const PUBLIC_KEY_BYTES: Record<SignatureAlgorithm, number> = { 'falcon-512': 897, 'ml-dsa-65': 1952 };
const ALGORITHMS: SignatureAlgorithm[] = ['falcon-512', 'ml-dsa-65'];

// Keys are generated once: Falcon key generation takes ~100 ms.
const keys: Record<SignatureAlgorithm, { a: SigningKeyPair; b: SigningKeyPair }> = {
  'falcon-512': {
    a: generateSigningKeyPair('falcon-512', seedOf(48)),
    b: generateSigningKeyPair('falcon-512', seedOf(48, 100)),
  },
  'ml-dsa-65': {
    a: generateSigningKeyPair('ml-dsa-65', seedOf(32)),
    b: generateSigningKeyPair('ml-dsa-65', seedOf(32, 100)),
  },
};

const dir = mkdtempSync(join(tmpdir(), 'cohort-signature-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('algorithm ids', () => {
  it('maps names to ids and back', () => {
    expect(SIGNATURE_ALGORITHM_IDS).toEqual({ 'falcon-512': 1, 'ml-dsa-65': 2 });
    expect(signatureAlgorithmFromId(1)).toBe('falcon-512');
    expect(signatureAlgorithmFromId(2)).toBe('ml-dsa-65');
  });

  it('throws SIGNATURE_ALGORITHM_UNKNOWN for other ids and names', () => {
    for (const id of [0, 3, 255, -1, 1.5]) {
      expect(codeOf(() => signatureAlgorithmFromId(id))).toBe('SIGNATURE_ALGORITHM_UNKNOWN');
    }
    expect(codeOf(() => generateSigningKeyPair('rsa' as SignatureAlgorithm))).toBe(
      'SIGNATURE_ALGORITHM_UNKNOWN',
    );
    expect(codeOf(() => generateSigningKeyPair('toString' as SignatureAlgorithm))).toBe(
      'SIGNATURE_ALGORITHM_UNKNOWN',
    );
  });
});

describe('signingMessage', () => {
  it('lays out prefix, domain, 0x00, uint32be length, message', () => {
    const out = signingMessage('block', Uint8Array.of(9, 8, 7));
    expect(out).toEqual(Uint8Array.from([...utf8('cohort/v1/block'), 0x00, 0, 0, 0, 3, 9, 8, 7]));
    expect(signingMessage('a', new Uint8Array(0))).toEqual(
      Uint8Array.from([...utf8('cohort/v1/a'), 0, 0, 0, 0, 0]),
    );
  });

  it('accepts domains matching /^[a-z0-9][a-z0-9.-]{0,63}$/ and rejects others', () => {
    for (const ok of ['block', 'manifest.v2', 'a', '0-9', 'x'.repeat(64)]) {
      expect(() => signingMessage(ok, new Uint8Array(1))).not.toThrow();
    }
    for (const bad of ['', 'Block', '-block', '.x', 'x'.repeat(65), 'a b', 'a/b', 'é', 'block\n']) {
      expect(() => signingMessage(bad, new Uint8Array(1))).toThrow(InvalidArgumentError);
    }
  });
});

describe('generateSigningKeyPair', () => {
  it('pins the public key derived from a fixed seed (regression vectors)', () => {
    expect(sha256Hex(keys['falcon-512'].a.publicKey)).toBe(
      '9cdd6a6a5de47ccc6e7433b511bcd14337e1836abf91eda94eca53607ce61626',
    );
    expect(sha256Hex(keys['ml-dsa-65'].a.publicKey)).toBe(
      'd666806e11cee19a7c989f7445f90dd419cf4d2d51db8c0fdb4c0f0a542238c9',
    );
    expect(keys['falcon-512'].a.keyId).toBe('2e86cd6897be3b022805b25ee15ed75c');
    expect(keys['ml-dsa-65'].a.keyId).toBe('aa795a3207a2656b293d6feec7301c5f');
  });

  it.each(ALGORITHMS)('%s: key id is SHA-256("cohort/v1/key-id" || 0 || id || pk)[0:16]', (alg) => {
    const { publicKey, keyId } = keys[alg].a;
    const expected = createHash('sha256')
      .update('cohort/v1/key-id')
      .update(Uint8Array.of(0, SIGNATURE_ALGORITHM_IDS[alg]))
      .update(publicKey)
      .digest('hex')
      .slice(0, 32);
    expect(keyId).toBe(expected);
    expect(computeKeyId(alg, publicKey)).toBe(expected);
    expect(computeKeyId(alg === 'falcon-512' ? 'ml-dsa-65' : 'falcon-512', publicKey)).not.toBe(expected);
  });

  it.each(ALGORITHMS)('%s: is deterministic with a seed, leaves the seed alone, random without', (alg) => {
    const seed = seedOf(SEED_BYTES[alg]);
    const again = generateSigningKeyPair(alg, seed);
    expect(again.publicKey).toEqual(keys[alg].a.publicKey);
    expect(again.secretKey).toEqual(keys[alg].a.secretKey);
    expect(seed).toEqual(seedOf(SEED_BYTES[alg]));
    expect(keys[alg].a.publicKey).toHaveLength(PUBLIC_KEY_BYTES[alg]);
    expect(generateSigningKeyPair(alg).publicKey).not.toEqual(keys[alg].a.publicKey);
  });

  it('validates seed length per algorithm, naming the argument', () => {
    expect(() => generateSigningKeyPair('falcon-512', new Uint8Array(32))).toThrow(
      'seed length 32, falcon-512 expects 48',
    );
    expect(() => generateSigningKeyPair('ml-dsa-65', new Uint8Array(48))).toThrow(
      'seed length 48, ml-dsa-65 expects 32',
    );
    expect(() => generateSigningKeyPair('ml-dsa-65', new Uint8Array(48))).toThrow(InvalidArgumentError);
  });
});

describe.each(ALGORITHMS)('sign / verify with %s', (alg) => {
  const { a, b } = keys[alg];
  const message = utf8('parameter block header and payload digest');
  const signature = sign(a, 'block', message);
  const pub = toPublicSigningKey(a);

  it('verifies a signature with the public key alone', () => {
    expect(verify(pub, 'block', message, signature)).toBe(true);
    expect(verify(a, 'block', message, signature)).toBe(true);
    expect(verify(pub, 'block', new Uint8Array(0), sign(a, 'block', new Uint8Array(0)))).toBe(true);
  });

  it('signs randomized: two signatures differ and both verify', () => {
    const again = sign(a, 'block', message);
    expect(again).not.toEqual(signature);
    expect(verify(pub, 'block', message, again)).toBe(true);
  });

  it('rejects a flipped bit in the signature (property)', () => {
    fc.assert(
      fc.property(fc.nat({ max: signature.length * 8 - 1 }), (bit) => {
        const bad = signature.slice();
        bad[bit >> 3]! ^= 1 << (bit & 7);
        return verify(pub, 'block', message, bad) === false;
      }),
      { numRuns: 60 },
    );
  });

  it('rejects a flipped bit in the message (property)', () => {
    fc.assert(
      fc.property(fc.nat({ max: message.length * 8 - 1 }), (bit) => {
        const bad = message.slice();
        bad[bit >> 3]! ^= 1 << (bit & 7);
        return verify(pub, 'block', bad, signature) === false;
      }),
      { numRuns: 40 },
    );
  });

  it('rejects the wrong domain, the wrong key and a raw (undomained) signature', () => {
    expect(verify(pub, 'manifest', message, signature)).toBe(false);
    expect(verify(pub, 'block.', message, signature)).toBe(false);
    expect(verify(b, 'block', message, signature)).toBe(false);
    const noble = alg === 'falcon-512' ? falcon512 : ml_dsa65;
    const raw = noble.sign(message, a.secretKey);
    expect(noble.verify(raw, message, a.publicKey)).toBe(true);
    expect(verify(pub, 'block', message, raw)).toBe(false);
  });

  it('returns false, never throws, for truncated, extended or empty signatures', () => {
    expect(verify(pub, 'block', message, signature.subarray(0, signature.length - 1))).toBe(false);
    expect(verify(pub, 'block', message, Uint8Array.from([...signature, 0]))).toBe(false);
    expect(verify(pub, 'block', message, new Uint8Array(0))).toBe(false);
    expect(verify(pub, 'block', message, new Uint8Array(signature.length))).toBe(false);
  });

  it('throws InvalidArgumentError for a public key of the wrong length', () => {
    const short = { ...pub, publicKey: new Uint8Array(12) };
    expect(() => verify(short, 'block', message, signature)).toThrow(
      `publicKey length 12, ${alg} expects ${PUBLIC_KEY_BYTES[alg]}`,
    );
    expect(() => sign({ ...a, secretKey: new Uint8Array(5) }, 'block', message)).toThrow(
      InvalidArgumentError,
    );
  });

  it('does not accept the same key bytes under the other algorithm', () => {
    const other: SignatureAlgorithm = alg === 'falcon-512' ? 'ml-dsa-65' : 'falcon-512';
    const otherSig = sign(keys[other].a, 'block', message);
    expect(verify(pub, 'block', message, otherSig)).toBe(false);
  });
});

describe.each(ALGORITHMS)('key encoding (%s)', (alg) => {
  const { a } = keys[alg];

  it('round-trips public keys as CPK1 || id || key', () => {
    const bytes = encodePublicKey(a);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('CPK1');
    expect(bytes[4]).toBe(SIGNATURE_ALGORITHM_IDS[alg]);
    expect(bytes).toHaveLength(5 + PUBLIC_KEY_BYTES[alg]);
    expect(decodePublicKey(bytes)).toEqual(toPublicSigningKey(a));
  });

  it('round-trips key pairs as CSK1 || id || public || secret', () => {
    const bytes = encodeSigningKeyPair(a);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('CSK1');
    const decoded = decodeSigningKeyPair(bytes);
    expect(decoded).toEqual({ ...a });
    bytes.fill(0);
    expect(decoded.secretKey).toEqual(a.secretKey);
  });

  it('rejects bad magic, truncation, extra bytes and unknown algorithm ids', () => {
    const pub = encodePublicKey(a);
    const pair = encodeSigningKeyPair(a);
    expect(codeOf(() => decodePublicKey(pair))).toBe('KEY_INVALID');
    expect(codeOf(() => decodeSigningKeyPair(pub))).toBe('KEY_INVALID');
    expect(codeOf(() => decodePublicKey(pub.subarray(0, pub.length - 1)))).toBe('KEY_INVALID');
    expect(codeOf(() => decodePublicKey(Uint8Array.from([...pub, 0])))).toBe('KEY_INVALID');
    expect(codeOf(() => decodeSigningKeyPair(pair.subarray(0, 100)))).toBe('KEY_INVALID');
    expect(codeOf(() => decodePublicKey(new Uint8Array(0)))).toBe('KEY_INVALID');
    const unknown = pub.slice();
    unknown[4] = 9;
    expect(codeOf(() => decodePublicKey(unknown))).toBe('SIGNATURE_ALGORITHM_UNKNOWN');
    expect(() => decodePublicKey(pub.subarray(0, 10))).toThrow(CryptoError);
  });
});

describe.each(ALGORITHMS)('key files (%s)', (alg) => {
  const { a, b } = keys[alg];

  it('saves the key pair with mode 0o600 and loads it back', () => {
    const path = join(dir, `${alg}-pair.key`);
    saveSigningKeyPair(path, a);
    if (posix) expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadSigningKeyPair(path)).toEqual({ ...a });
  });

  it('forces 0o600 on a file that already existed with a wider mode', () => {
    const path = join(dir, `${alg}-existing.key`);
    writeFileSync(path, 'old contents that are longer than nothing', { mode: 0o644 });
    chmodSync(path, 0o644);
    saveSigningKeyPair(path, a);
    if (posix) expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(loadSigningKeyPair(path).keyId).toBe(a.keyId);
  });

  it.skipIf(!posix)('refuses a secret key file that group or others can read', () => {
    const path = join(dir, `${alg}-open.key`);
    saveSigningKeyPair(path, a);
    for (const mode of [0o640, 0o604, 0o660]) {
      chmodSync(path, mode);
      expect(codeOf(() => loadSigningKeyPair(path))).toBe('KEY_FILE_PERMISSIONS');
    }
  });

  it.skipIf(!posix)(
    'refuses a secret key file in a folder group or others may write, also through a symlink',
    () => {
      const folder = join(dir, `${alg}-shared`);
      mkdirSync(folder);
      const path = join(folder, 'k.key');
      saveSigningKeyPair(path, a);
      for (const mode of [0o777, 0o770, 0o1777, 0o722]) {
        chmodSync(folder, mode);
        const error = errorOf(() => loadSigningKeyPair(path));
        expect(error?.code).toBe('KEY_FOLDER_PERMISSIONS');
        expect(error?.message).toContain(folder);
        expect(error?.message).toContain(`0o${mode.toString(8)}`);
      }
      chmodSync(folder, 0o755);
      expect(loadSigningKeyPair(path).keyId).toBe(a.keyId);
      // A link in a tight folder to a key in a loose one: the target's folder is checked too.
      chmodSync(folder, 0o777);
      const tight = join(dir, `${alg}-tight`);
      mkdirSync(tight, { mode: 0o700 });
      symlinkSync(path, join(tight, 'link.key'));
      expect(codeOf(() => loadSigningKeyPair(join(tight, 'link.key')))).toBe('KEY_FOLDER_PERMISSIONS');
    },
  );

  it.skipIf(!posix || process.getuid?.() !== 0)(
    'refuses a secret key file, or its folder, owned by another user',
    () => {
      const folder = join(dir, `${alg}-owned`);
      mkdirSync(folder, { mode: 0o700 });
      const path = join(folder, 'k.key');
      saveSigningKeyPair(path, a);
      chownSync(path, 65534, 65534);
      const error = errorOf(() => loadSigningKeyPair(path));
      expect(error?.code).toBe('KEY_FILE_OWNER');
      expect(error?.message).toContain('uid 65534');
      chownSync(path, 0, 0);
      chownSync(folder, 65534, 65534);
      expect(codeOf(() => loadSigningKeyPair(path))).toBe('KEY_FOLDER_PERMISSIONS');
    },
  );

  it('refuses a key pair whose public key belongs to another secret key', () => {
    const path = join(dir, `${alg}-mismatch.key`);
    const mixed: SigningKeyPair = {
      algorithm: alg,
      publicKey: b.publicKey,
      secretKey: a.secretKey,
      keyId: b.keyId,
    };
    saveSigningKeyPair(path, mixed);
    expect(codeOf(() => loadSigningKeyPair(path))).toBe('KEY_INVALID');
  });

  it('reports a missing or malformed file with a stable code', () => {
    expect(codeOf(() => loadSigningKeyPair(join(dir, 'absent.key')))).toBe('KEY_FILE_UNREADABLE');
    expect(codeOf(() => loadPublicKey(join(dir, 'absent.pub')))).toBe('KEY_FILE_UNREADABLE');
    const path = join(dir, `${alg}-garbage.key`);
    writeFileSync(path, 'not a key', { mode: 0o600 });
    expect(codeOf(() => loadSigningKeyPair(path))).toBe('KEY_INVALID');
  });

  it('saves and loads public keys', () => {
    const path = join(dir, `${alg}.pub`);
    savePublicKey(path, a);
    expect(loadPublicKey(path)).toEqual(toPublicSigningKey(a));
    expect(readFileSync(path).subarray(0, 4).toString()).toBe('CPK1');
  });
});

describe('wipeSigningKeyPair', () => {
  it('zeroes the secret key', () => {
    const kp = generateSigningKeyPair('ml-dsa-65');
    wipeSigningKeyPair(kp);
    expect(kp.secretKey.every((x) => x === 0)).toBe(true);
  });
});
