import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  generateSigningKeyPair,
  type PublicSigningKey,
  type SigningKeyPair,
  sign,
  toPublicSigningKey,
  verify,
} from '../../crypto/signature/index.ts';
import { encodeStrategyState, type StrategyState } from '../../federation/strategy/index.ts';
import type { CohortError } from '../../src/errors/index.ts';
import type { KeyLookup } from '../../src/protocol/block-verifier.ts';
import { type Commit, genesisCommit, roundCommit } from '../../src/versions/commit.ts';
import { modelHash } from '../../src/versions/model-hash.ts';
import {
  encodeSnapshot,
  maxSnapshotBytes,
  openSnapshot,
  peekSnapshotHeader,
  readSnapshotHeader,
  SNAPSHOT_SIGNING_DOMAIN,
  type SnapshotInput,
} from '../../src/versions/snapshot.ts';
import { SNAPSHOT_ERROR_CODES, SnapshotError } from '../../src/versions/snapshot-error.ts';
import { STRATEGY_STATE_HASH_DOMAIN, strategyStateHash } from '../../src/versions/strategy-state-hash.ts';
import { errorCode } from '../helpers/error-code.ts';

const FED = 'demo-federation';
const P = 10;
const W0 = Float32Array.from({ length: P }, (_, i) => (i - 4) / 8);
const W1 = Float32Array.from({ length: P }, (_, i) => (i % 3) - 1.25);
W1[3] = -0; // bit patterns travel as they are
const AGG = new Uint8Array(32).fill(0xab);
const PARAMS = new TextEncoder().encode('fedadam;b=4');
const MAX = 1 << 20;

const FEDAVG: StrategyState = { strategy: 'fedavg', step: 3, m: new Float32Array(0), v: new Float32Array(0) };
const FEDADAM: StrategyState = {
  strategy: 'fedadam',
  step: 7,
  m: Float32Array.from({ length: P }, (_, i) => Math.sin(i) / 10),
  v: Float32Array.from({ length: P }, (_, i) => (i + 1) / 1000),
};

let siteA: SigningKeyPair;
let siteB: SigningKeyPair;
let siteAOther: SigningKeyPair;
let siteDsa: SigningKeyPair;
let genesis: Commit;
let commit: Commit;
const dataKey = new Uint8Array(randomBytes(32));
let registry: Map<string, PublicSigningKey>;
let keys: KeyLookup;

beforeAll(() => {
  siteA = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(1));
  siteB = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(2));
  siteAOther = generateSigningKeyPair('falcon-512', new Uint8Array(48).fill(3));
  siteDsa = generateSigningKeyPair('ml-dsa-65', new Uint8Array(32).fill(4));
  registry = new Map([
    ['site-a', toPublicSigningKey(siteA)],
    ['site-b', toPublicSigningKey(siteB)],
    ['site-dsa', toPublicSigningKey(siteDsa)],
  ]);
  keys = (signer) => registry.get(signer);
  genesis = genesisCommit(W0, PARAMS);
  commit = roundCommit(genesis, { round: 1, aggregateDigest: AGG, modelHash: modelHash(W1), params: PARAMS });
});

function input(overrides: Partial<SnapshotInput> = {}): SnapshotInput {
  return {
    federation: FED,
    commit,
    logSequence: 42,
    parameters: W1,
    strategyState: FEDADAM,
    dataKey,
    signer: 'site-a',
    signing: siteA,
    ...overrides,
  };
}

function expected(overrides: Record<string, unknown> = {}) {
  return { federation: FED, commitHash: commit.hash, modelHash: commit.modelHash, ...overrides };
}

function open(bytes: Uint8Array, overrides: Record<string, unknown> = {}) {
  return openSnapshot(bytes, { keys, dataKey, expected: expected(), maxBytes: MAX, ...overrides });
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

function sha(...parts: Uint8Array[]): Buffer {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Walks the documented layout by hand (independent of the implementation's reader). */
function parseByHand(bytes: Uint8Array) {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = b.readUInt32BE(8);
  const header = b.subarray(12, 12 + headerLength);
  let at = 0;
  const u8 = () => header.readUInt8(at++);
  const u64 = () => {
    const v = Number(header.readBigUInt64BE(at));
    at += 8;
    return v;
  };
  const raw = () => {
    const n = header.readUInt32BE(at);
    const out = header.subarray(at + 4, at + 4 + n);
    at += 4 + n;
    return out;
  };
  const fields = {
    federation: raw().toString('utf8'),
    commitHash: hex(raw()),
    height: u64(),
    round: u64(),
    kindId: u8(),
    modelHash: hex(raw()),
    stateHash: hex(raw()),
    logSequence: u64(),
    parameterCount: u64(),
    signer: raw().toString('utf8'),
    signerKeyId: raw().toString('utf8'),
    algorithmId: u8(),
    nonce: Buffer.from(raw()),
    ciphertextLength: u64(),
  };
  const aadLength = at;
  const digest = hex(raw());
  const headerEnd = at;
  const signatureLength = b.readUInt32BE(12 + headerLength);
  const signature = b.subarray(16 + headerLength, 16 + headerLength + signatureLength);
  const sealed = b.subarray(16 + headerLength + signatureLength);
  return {
    prefix: { magic: b.subarray(0, 4).toString('latin1'), version: b[4], reserved: [b[5], b[6], b[7]] },
    headerLength,
    headerEnd,
    header,
    fields,
    aad: header.subarray(0, aadLength),
    digest,
    signature,
    sealed,
    headerOffset: 12,
  };
}

/** Builds a snapshot from the documented layout with node:crypto, signed by `signing`. */
function forge(opts: {
  stateHash: Uint8Array;
  plaintext: Uint8Array;
  parameterCount: number;
  signing?: SigningKeyPair;
  signer?: string;
}): Uint8Array {
  const signing = opts.signing ?? siteA;
  const nonce = randomBytes(12);
  const u64 = (n: number) => {
    const x = Buffer.alloc(8);
    x.writeBigUInt64BE(BigInt(n));
    return x;
  };
  const u32 = (n: number) => {
    const x = Buffer.alloc(4);
    x.writeUInt32BE(n);
    return x;
  };
  const bytes = (x: Uint8Array) => Buffer.concat([u32(x.length), x]);
  const str = (s: string) => bytes(Buffer.from(s, 'utf8'));
  const ciphertextLength = opts.plaintext.length + 16;
  const aad = Buffer.concat([
    str(FED),
    bytes(commit.hash),
    u64(commit.height),
    u64(commit.round),
    Buffer.of(1),
    bytes(commit.modelHash),
    bytes(opts.stateHash),
    u64(42),
    u64(opts.parameterCount),
    str(opts.signer ?? 'site-a'),
    str(signing.keyId),
    Buffer.of(signing.algorithm === 'falcon-512' ? 1 : 2),
    bytes(nonce),
    u64(ciphertextLength),
  ]);
  const cipher = createCipheriv('aes-256-gcm', dataKey, nonce, { authTagLength: 16 });
  cipher.setAAD(aad);
  const sealed = Buffer.concat([cipher.update(opts.plaintext), cipher.final(), cipher.getAuthTag()]);
  const header = Buffer.concat([aad, bytes(sha(sealed))]);
  const signature = sign(signing, SNAPSHOT_SIGNING_DOMAIN, header);
  const prefix = Buffer.concat([Buffer.from('COHS'), Buffer.of(1, 0, 0, 0), u32(header.length)]);
  return Buffer.concat([prefix, header, u32(signature.length), signature, sealed]);
}

function plaintextOf(state: StrategyState, parameters: Float32Array, stateLengthDelta = 0): Uint8Array {
  const encoded = encodeStrategyState(state);
  const length = Buffer.alloc(4);
  length.writeUInt32LE(encoded.length + stateLengthDelta);
  const floats = Buffer.alloc(parameters.length * 4);
  parameters.forEach((v, i) => {
    floats.writeFloatLE(v, i * 4);
  });
  return Buffer.concat([length, encoded, floats]);
}

function flip(bytes: Uint8Array, index: number): Uint8Array {
  const out = bytes.slice();
  out[index]! ^= 0x01;
  return out;
}

function bitsOf(values: Float32Array): string {
  return hex(new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
}

describe('encodeSnapshot / openSnapshot round trip', () => {
  it('restores a fedadam model and state (m, v) bit for bit', () => {
    const bytes = encodeSnapshot(input());
    const opened = open(bytes, { expected: expected({ stateHash: strategyStateHash(FEDADAM) }) });
    expect(bitsOf(opened.parameters)).toBe(bitsOf(W1));
    expect(Object.is(opened.parameters[3], -0)).toBe(true);
    expect(opened.strategyState.strategy).toBe('fedadam');
    expect(opened.strategyState.step).toBe(7);
    expect(bitsOf(opened.strategyState.m)).toBe(bitsOf(FEDADAM.m));
    expect(bitsOf(opened.strategyState.v)).toBe(bitsOf(FEDADAM.v));
    expect(opened.header).toMatchObject({
      federation: FED,
      height: 1,
      round: 1,
      kind: 'round',
      logSequence: 42,
      parameterCount: P,
      signer: 'site-a',
      signerKeyId: siteA.keyId,
      signatureAlgorithm: 'falcon-512',
    });
    expect(hex(opened.header.commitHash)).toBe(hex(commit.hash));
    expect(hex(opened.header.modelHash)).toBe(hex(commit.modelHash));
    expect(hex(opened.header.stateHash)).toBe(hex(strategyStateHash(FEDADAM)));
    expect(opened.parameters.buffer).not.toBe(bytes.buffer);
  });

  it('restores a fedavg model with its empty state, and a genesis commit', () => {
    const bytes = encodeSnapshot(input({ strategyState: FEDAVG }));
    const opened = open(bytes);
    expect(bitsOf(opened.parameters)).toBe(bitsOf(W1));
    expect(opened.strategyState).toMatchObject({ strategy: 'fedavg', step: 3 });
    expect(opened.strategyState.m.length).toBe(0);

    const g = encodeSnapshot(
      input({ commit: genesis, parameters: W0, strategyState: FEDAVG, logSequence: 1 }),
    );
    const openedGenesis = open(g, {
      expected: expected({ commitHash: genesis.hash, modelHash: genesis.modelHash }),
    });
    expect(openedGenesis.header).toMatchObject({ kind: 'genesis', height: 0, round: 0, logSequence: 1 });
    expect(bitsOf(openedGenesis.parameters)).toBe(bitsOf(W0));
  });

  it('works with an ml-dsa-65 signer', () => {
    const bytes = encodeSnapshot(input({ signer: 'site-dsa', signing: siteDsa }));
    expect(open(bytes).header.signatureAlgorithm).toBe('ml-dsa-65');
  });

  it('uses a fresh nonce per snapshot and leaves the inputs untouched', () => {
    const key = dataKey.slice();
    const state = { ...FEDADAM, m: FEDADAM.m.slice(), v: FEDADAM.v.slice() };
    const a = encodeSnapshot(input({ strategyState: state }));
    const b = encodeSnapshot(input({ strategyState: state }));
    expect(parseByHand(a).fields.nonce.equals(parseByHand(b).fields.nonce)).toBe(false);
    expect(hex(dataKey)).toBe(hex(key));
    expect(bitsOf(state.m)).toBe(bitsOf(FEDADAM.m));
  });
});

describe('snapshot byte layout (known answer)', () => {
  it('decodes by hand into the documented fields', () => {
    const bytes = encodeSnapshot(input());
    const hand = parseByHand(bytes);
    expect(hand.prefix).toEqual({ magic: 'COHS', version: 1, reserved: [0, 0, 0] });
    expect(hand.headerEnd).toBe(hand.headerLength);
    const stateBytes = encodeStrategyState(FEDADAM);
    const ciphertextLength = 4 + stateBytes.length + 4 * P + 16;
    expect(hand.fields).toEqual({
      federation: FED,
      commitHash: hex(commit.hash),
      height: 1,
      round: 1,
      kindId: 1,
      modelHash: hex(commit.modelHash),
      stateHash: hex(strategyStateHash(FEDADAM)),
      logSequence: 42,
      parameterCount: P,
      signer: 'site-a',
      signerKeyId: siteA.keyId,
      algorithmId: 1,
      nonce: hand.fields.nonce,
      ciphertextLength,
    });
    expect(hand.fields.nonce.length).toBe(12);
    expect(hand.sealed.length).toBe(ciphertextLength);
    expect(bytes.length).toBe(12 + hand.headerLength + 4 + hand.signature.length + ciphertextLength);
    expect(hand.digest).toBe(hex(sha(hand.sealed)));
    expect(verify(toPublicSigningKey(siteA), 'model-snapshot', hand.header, hand.signature)).toBe(true);

    // AES-256-GCM under the data key, associated data = header minus its digest field.
    const decipher = createDecipheriv('aes-256-gcm', dataKey, hand.fields.nonce, { authTagLength: 16 });
    decipher.setAAD(hand.aad);
    decipher.setAuthTag(hand.sealed.subarray(hand.sealed.length - 16));
    const plain = Buffer.concat([
      decipher.update(hand.sealed.subarray(0, hand.sealed.length - 16)),
      decipher.final(),
    ]);
    expect(plain.readUInt32LE(0)).toBe(stateBytes.length);
    expect(hex(plain.subarray(4, 4 + stateBytes.length))).toBe(hex(stateBytes));
    expect(hex(plain.subarray(4 + stateBytes.length))).toBe(bitsOf(W1));
  });

  it('opens a snapshot built independently from the documented layout', () => {
    const bytes = forge({
      stateHash: strategyStateHash(FEDADAM),
      plaintext: plaintextOf(FEDADAM, W1),
      parameterCount: P,
    });
    const opened = open(bytes);
    expect(bitsOf(opened.parameters)).toBe(bitsOf(W1));
    expect(opened.strategyState.step).toBe(7);
  });

  it('strategyStateHash is SHA-256(str(domain) ‖ u64(length) ‖ encodeStrategyState)', () => {
    for (const state of [FEDAVG, FEDADAM]) {
      const encoded = encodeStrategyState(state);
      const domain = Buffer.from(STRATEGY_STATE_HASH_DOMAIN, 'utf8');
      const len = Buffer.alloc(4);
      len.writeUInt32BE(domain.length);
      const u64 = Buffer.alloc(8);
      u64.writeBigUInt64BE(BigInt(encoded.length));
      expect(hex(strategyStateHash(state))).toBe(hex(sha(len, domain, u64, encoded)));
      expect(hex(strategyStateHash(state))).not.toBe(hex(sha(encoded)));
    }
    expect(STRATEGY_STATE_HASH_DOMAIN).toBe('cohort/v1/strategy-state');
    expect(hex(strategyStateHash(FEDAVG))).toBe(
      hex(strategyStateHash({ strategy: 'fedavg', step: 3, m: new Float32Array(0), v: new Float32Array(0) })),
    );
    expect(hex(strategyStateHash(FEDAVG))).not.toBe(hex(strategyStateHash({ ...FEDAVG, step: 4 })));
  });
});

describe('readSnapshotHeader', () => {
  it('verifies without the data key', () => {
    // Encrypted under a key this test never keeps: the header still verifies.
    const bytes = encodeSnapshot(input({ dataKey: new Uint8Array(randomBytes(32)) }));
    const header = readSnapshotHeader(bytes, keys, { maxBytes: MAX });
    expect(header.signer).toBe('site-a');
    expect(hex(header.commitHash)).toBe(hex(commit.hash));
    expect(hex(header.ciphertextDigest)).toBe(parseByHand(bytes).digest);
    expect(readSnapshotHeader.length).toBe(3);
    expect(errorCode(() => open(bytes))).toBe('SNAPSHOT_DECRYPT_FAILED');
  });

  it('checks the size before parsing anything', () => {
    const bytes = encodeSnapshot(input());
    expect(errorCode(() => readSnapshotHeader(bytes, keys, { maxBytes: bytes.length - 1 }))).toBe(
      'SNAPSHOT_TOO_LARGE',
    );
    expect(readSnapshotHeader(bytes, keys, { maxBytes: bytes.length }).parameterCount).toBe(P);
    // Garbage that would be MALFORMED is refused as too large first.
    const garbage = new Uint8Array(64);
    expect(errorCode(() => readSnapshotHeader(garbage, keys, { maxBytes: 63 }))).toBe('SNAPSHOT_TOO_LARGE');
    expect(errorCode(() => readSnapshotHeader(garbage, keys, { maxBytes: 64 }))).toBe('SNAPSHOT_MALFORMED');
    expect(errorCode(() => open(bytes, { maxBytes: 100 }))).toBe('SNAPSHOT_TOO_LARGE');
  });

  it('refuses bad arguments naming them', () => {
    const bytes = encodeSnapshot(input());
    expect(() => readSnapshotHeader('x' as unknown as Uint8Array, keys, { maxBytes: MAX })).toThrow(
      /bytes must be/,
    );
    expect(() => readSnapshotHeader(bytes, null as unknown as KeyLookup, { maxBytes: MAX })).toThrow(
      /keys must be/,
    );
    expect(() => readSnapshotHeader(bytes, keys, { maxBytes: 0 })).toThrow(/limits.maxBytes/);
    expect(() => open(bytes, { dataKey: new Uint8Array(16) })).toThrow(/options.dataKey length 16/);
    expect(() => open(bytes, { expected: expected({ commitHash: new Uint8Array(3) }) })).toThrow(
      /options.expected.commitHash/,
    );
  });
});

describe('peekSnapshotHeader and maxSnapshotBytes', () => {
  it('reads the header without a key, a hash or a signature, refusing only size and shape', () => {
    const bytes = encodeSnapshot(input());
    const peeked = peekSnapshotHeader(bytes, { maxBytes: MAX });
    expect(peeked).toEqual(readSnapshotHeader(bytes, keys, { maxBytes: MAX }));
    // A signature that does not verify and a ciphertext that does not hash to the header still
    // peek: nothing returned is authenticated.
    const hand = parseByHand(bytes);
    const lastSignatureByte = 12 + hand.headerLength + 4 + hand.signature.length - 1;
    expect(peekSnapshotHeader(flip(bytes, lastSignatureByte), { maxBytes: MAX }).signer).toBe('site-a');
    expect(peekSnapshotHeader(flip(bytes, bytes.length - 1), { maxBytes: MAX }).height).toBe(1);
    expect(errorCode(() => peekSnapshotHeader(bytes, { maxBytes: bytes.length - 1 }))).toBe(
      'SNAPSHOT_TOO_LARGE',
    );
    expect(errorCode(() => peekSnapshotHeader(new Uint8Array(64), { maxBytes: MAX }))).toBe(
      'SNAPSHOT_MALFORMED',
    );
    expect(errorCode(() => peekSnapshotHeader(bytes.subarray(0, bytes.length - 1), { maxBytes: MAX }))).toBe(
      'SNAPSHOT_MALFORMED',
    );
    expect(() => peekSnapshotHeader(bytes, { maxBytes: 0 })).toThrow(/limits.maxBytes/);
    expect(() => peekSnapshotHeader([] as unknown as Uint8Array, { maxBytes: MAX })).toThrow(/bytes must be/);
  });

  it('bounds every snapshot of a model: moments and the largest header and signature fit, one byte more does not', () => {
    for (const signing of [siteA, siteDsa]) {
      const signer = signing === siteA ? 'site-a' : 'site-dsa';
      const bytes = encodeSnapshot(input({ signing, signer }));
      expect(bytes.length).toBeLessThanOrEqual(maxSnapshotBytes(P));
      expect(readSnapshotHeader(bytes, keys, { maxBytes: maxSnapshotBytes(P) }).parameterCount).toBe(P);
    }
    // Prefix, the largest header (4096) and signature (8192) and their lengths, tag, state
    // length, state header (20) and 12 bytes a parameter (the model and two moment vectors).
    expect(maxSnapshotBytes(0)).toBe(12 + 4096 + 4 + 8192 + 16 + 4 + 20);
    expect(maxSnapshotBytes(P) - maxSnapshotBytes(0)).toBe(12 * P);
  });
});

describe('refusals, one code per case', () => {
  let good: Uint8Array;
  let hand: ReturnType<typeof parseByHand>;
  beforeAll(() => {
    good = encodeSnapshot(input());
    hand = parseByHand(good);
  });

  /** Offset in the snapshot of a header field's first byte, found by its bytes. */
  function headerOffsetOf(needle: Uint8Array): number {
    const at = Buffer.from(hand.header).indexOf(Buffer.from(needle));
    expect(at).toBeGreaterThan(0);
    return 12 + at;
  }

  const cases: [string, () => Uint8Array, string, Record<string, unknown>?][] = [
    ['truncated by one byte', () => good.subarray(0, good.length - 1), 'SNAPSHOT_MALFORMED'],
    ['truncated to the prefix', () => good.subarray(0, 7), 'SNAPSHOT_MALFORMED'],
    ['truncated inside the header', () => good.subarray(0, 40), 'SNAPSHOT_MALFORMED'],
    ['one byte appended', () => Buffer.concat([good, Buffer.of(0)]), 'SNAPSHOT_MALFORMED'],
    ['another magic', () => flip(good, 0), 'SNAPSHOT_MALFORMED'],
    ['another format version', () => flip(good, 4), 'SNAPSHOT_MALFORMED'],
    ['a reserved byte set', () => flip(good, 6), 'SNAPSHOT_MALFORMED'],
    ['a huge header length', () => flip(good, 9), 'SNAPSHOT_MALFORMED'],
    [
      'a flipped model-hash byte in the header',
      () => flip(good, headerOffsetOf(commit.modelHash) + 5),
      'SNAPSHOT_BAD_SIGNATURE',
    ],
    ['a flipped federation byte', () => flip(good, 12 + 4), 'SNAPSHOT_BAD_SIGNATURE'],
    ['a flipped nonce byte', () => flip(good, headerOffsetOf(hand.fields.nonce)), 'SNAPSHOT_BAD_SIGNATURE'],
    ['a flipped signature byte', () => flip(good, 12 + hand.headerLength + 4 + 20), 'SNAPSHOT_BAD_SIGNATURE'],
    ['a flipped ciphertext byte', () => flip(good, good.length - 30), 'SNAPSHOT_DIGEST_MISMATCH'],
    ['a flipped tag byte', () => flip(good, good.length - 1), 'SNAPSHOT_DIGEST_MISMATCH'],
    [
      'a flipped ciphertext byte with the header digest patched to match',
      () => {
        const out = flip(good, good.length - 30);
        const sealed = out.subarray(12 + hand.headerLength + 4 + hand.signature.length);
        out.set(sha(sealed), 12 + hand.headerLength - 32);
        return out;
      },
      'SNAPSHOT_BAD_SIGNATURE',
    ],
    [
      'a parameter count that does not fit the ciphertext',
      () => {
        const at = 12 + hand.aad.length - 8 - 4 - 12 - 1 - 4 - siteA.keyId.length - 4 - 'site-a'.length - 8;
        const out = good.slice();
        Buffer.from(out.buffer).writeBigUInt64BE(BigInt(P + 1), at);
        return out;
      },
      'SNAPSHOT_MALFORMED',
    ],
    [
      'an unknown commit kind id',
      () => {
        const out = good.slice();
        out[headerOffsetOf(commit.modelHash) - 4 - 1] = 7;
        return out;
      },
      'SNAPSHOT_MALFORMED',
    ],
    [
      'the same snapshot re-signed by another member (header still names site-a)',
      () => {
        const signature = sign(siteB, SNAPSHOT_SIGNING_DOMAIN, hand.header);
        const u32 = Buffer.alloc(4);
        u32.writeUInt32BE(signature.length);
        return Buffer.concat([good.subarray(0, 12 + hand.headerLength), u32, signature, hand.sealed]);
      },
      'SNAPSHOT_BAD_SIGNATURE',
    ],
  ];

  it.each(cases)('%s → %s', (_name, make, expectedCode) => {
    const bytes = make();
    expect(errorCode(() => readSnapshotHeader(bytes, keys, { maxBytes: MAX }))).toBe(expectedCode);
    expect(errorCode(() => open(bytes))).toBe(expectedCode);
  });

  it('sanity: the parameter-count offset used above is the field', () => {
    const at = 12 + hand.aad.length - 8 - 4 - 12 - 1 - 4 - siteA.keyId.length - 4 - 'site-a'.length - 8;
    expect(Number(Buffer.from(good.buffer).readBigUInt64BE(at))).toBe(P);
  });

  it('SNAPSHOT_WRONG_SIGNER: unknown signer, other key id, other algorithm', () => {
    expect(errorCode(() => readSnapshotHeader(good, () => undefined, { maxBytes: MAX }))).toBe(
      'SNAPSHOT_WRONG_SIGNER',
    );
    const other = toPublicSigningKey(siteAOther);
    expect(
      errorCode(() =>
        readSnapshotHeader(good, (s) => (s === 'site-a' ? other : undefined), { maxBytes: MAX }),
      ),
    ).toBe('SNAPSHOT_WRONG_SIGNER');
    const dsa = toPublicSigningKey(siteDsa);
    expect(
      errorCode(() => readSnapshotHeader(good, () => ({ ...dsa, keyId: siteA.keyId }), { maxBytes: MAX })),
    ).toBe('SNAPSHOT_WRONG_SIGNER');
    expect(() => readSnapshotHeader(good, () => other, { maxBytes: MAX })).toThrow(
      `snapshot signer "site-a" used key ${siteA.keyId} (falcon-512); the registry has ${other.keyId} (falcon-512)`,
    );
    expect(() => readSnapshotHeader(good, () => undefined, { maxBytes: MAX })).toThrow(
      'snapshot signer "site-a" is not in the key registry',
    );
  });

  it('a snapshot rewritten to name and be signed by another member verifies, but does not decrypt', () => {
    // site-b puts itself in the header (same lengths) and re-signs: origin checks pass, the AEAD binds site-a.
    const header = Buffer.from(hand.header);
    header.set(Buffer.from('site-b'), header.indexOf(Buffer.from('site-a')));
    header.set(Buffer.from(siteB.keyId), header.indexOf(Buffer.from(siteA.keyId)));
    const signature = sign(siteB, SNAPSHOT_SIGNING_DOMAIN, header);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(signature.length);
    const bytes = Buffer.concat([good.subarray(0, 12), header, len, signature, hand.sealed]);
    expect(readSnapshotHeader(bytes, keys, { maxBytes: MAX }).signer).toBe('site-b');
    expect(errorCode(() => open(bytes))).toBe('SNAPSHOT_DECRYPT_FAILED');
  });

  it('runs the cheap checks first: signer before digest, digest before signature', () => {
    const tampered = flip(good, good.length - 30);
    expect(errorCode(() => readSnapshotHeader(tampered, () => undefined, { maxBytes: MAX }))).toBe(
      'SNAPSHOT_WRONG_SIGNER',
    );
    const badSignature = flip(tampered, 12 + hand.headerLength + 4 + 20);
    expect(errorCode(() => readSnapshotHeader(badSignature, keys, { maxBytes: MAX }))).toBe(
      'SNAPSHOT_DIGEST_MISMATCH',
    );
  });

  it('SNAPSHOT_DECRYPT_FAILED under another data key', () => {
    expect(errorCode(() => open(good, { dataKey: new Uint8Array(32).fill(9) }))).toBe(
      'SNAPSHOT_DECRYPT_FAILED',
    );
  });

  it('names the signer of what it refused only once the signature verified (details.signedBy)', () => {
    const refusal = (bytes: Uint8Array, options: Record<string, unknown> = {}) => {
      try {
        open(bytes, options);
      } catch (err) {
        return err as SnapshotError;
      }
      throw new Error('expected a refusal');
    };
    const decrypt = refusal(good, { dataKey: new Uint8Array(32).fill(9) });
    expect([decrypt.code, decrypt.details['signedBy']]).toEqual(['SNAPSHOT_DECRYPT_FAILED', 'site-a']);
    const context = refusal(good, { expected: expected({ stateHash: new Uint8Array(32) }) });
    expect([context.code, context.details['signedBy']]).toEqual(['SNAPSHOT_CONTEXT', 'site-a']);
    // Bytes the signer did not sign: no one is named.
    const tampered = refusal(flip(good, good.length - 1));
    expect(tampered.code).toBe('SNAPSHOT_DIGEST_MISMATCH');
    expect(tampered.details['signedBy']).toBeUndefined();
  });

  it('SNAPSHOT_CONTEXT for another federation, commit, model or state', () => {
    const other = new Uint8Array(32).fill(0x11);
    for (const [overrides, field] of [
      [{ federation: 'other-federation' }, 'federation'],
      [{ commitHash: genesis.hash }, 'commitHash'],
      [{ modelHash: other }, 'modelHash'],
      [{ stateHash: strategyStateHash(FEDAVG) }, 'stateHash'],
    ] as const) {
      let error: unknown;
      try {
        open(good, { expected: expected(overrides) });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(SnapshotError);
      expect((error as SnapshotError).code).toBe('SNAPSHOT_CONTEXT');
      expect((error as SnapshotError).message).toContain(`snapshot ${field} is`);
    }
  });

  it('SNAPSHOT_MODEL_MISMATCH when the signed parameters are not the model the header names', () => {
    const bytes = forge({
      stateHash: strategyStateHash(FEDADAM),
      plaintext: plaintextOf(FEDADAM, W0),
      parameterCount: P,
    });
    expect(readSnapshotHeader(bytes, keys, { maxBytes: MAX }).signer).toBe('site-a');
    expect(errorCode(() => open(bytes))).toBe('SNAPSHOT_MODEL_MISMATCH');
    // The site whose signature verified over the wrong model is named.
    const refusal = (() => {
      try {
        open(bytes);
      } catch (err) {
        return err as SnapshotError;
      }
      return undefined;
    })();
    expect(refusal?.details['signedBy']).toBe('site-a');
    const nan = W1.slice();
    nan[2] = Number.NaN;
    const bad = forge({
      stateHash: strategyStateHash(FEDADAM),
      plaintext: plaintextOf(FEDADAM, nan),
      parameterCount: P,
    });
    expect(errorCode(() => open(bad))).toBe('SNAPSHOT_MODEL_MISMATCH');
  });

  it('SNAPSHOT_STATE_MISMATCH when the signed state is not the state the header names', () => {
    const otherState = { ...FEDADAM, step: 8 };
    const bytes = forge({
      stateHash: strategyStateHash(FEDADAM),
      plaintext: plaintextOf(otherState, W1),
      parameterCount: P,
    });
    expect(errorCode(() => open(bytes))).toBe('SNAPSHOT_STATE_MISMATCH');
  });

  it('SNAPSHOT_MALFORMED for an authenticated plaintext whose state length is inconsistent', () => {
    const bytes = forge({
      stateHash: strategyStateHash(FEDADAM),
      plaintext: plaintextOf(FEDADAM, W1, 4),
      parameterCount: P,
    });
    expect(errorCode(() => open(bytes))).toBe('SNAPSHOT_MALFORMED');
  });

  it('every code thrown is in the catalogue', () => {
    expect([...SNAPSHOT_ERROR_CODES].sort()).toEqual(
      [
        'SNAPSHOT_BAD_SIGNATURE',
        'SNAPSHOT_CONTEXT',
        'SNAPSHOT_DECRYPT_FAILED',
        'SNAPSHOT_DIGEST_MISMATCH',
        'SNAPSHOT_MALFORMED',
        'SNAPSHOT_MODEL_MISMATCH',
        'SNAPSHOT_NOT_SCHEDULED',
        'SNAPSHOT_STATE_MISMATCH',
        'SNAPSHOT_TOO_LARGE',
        'SNAPSHOT_WRONG_SIGNER',
      ].sort(),
    );
  });
});

describe('encodeSnapshot input checks', () => {
  const cases: [string, Partial<SnapshotInput>, RegExp][] = [
    ['empty federation', { federation: '' }, /input.federation must be a non-empty string/],
    ['empty signer', { signer: '' }, /input.signer must be a non-empty string/],
    ['long federation', { federation: 'x'.repeat(256) }, /input.federation is 256 UTF-8 bytes/],
    ['log sequence 0', { logSequence: 0 }, /input.logSequence must be an integer/],
    ['short data key', { dataKey: new Uint8Array(31) }, /input.dataKey length 31/],
    ['parameters of another model', { parameters: W0 }, /input.parameters do not hash/],
    [
      'moments of another length',
      { strategyState: { ...FEDADAM, m: new Float32Array(3), v: new Float32Array(3) } },
      /input.strategyState.m length 3, parameters length 10/,
    ],
    [
      'a tampered commit',
      { commit: { ...({} as Commit), hash: new Uint8Array(32) } },
      /input.commit must be a commit/,
    ],
    ['no signing key', { signing: undefined as unknown as SigningKeyPair }, /input.signing/],
  ];
  it.each(cases)('%s', (_name, overrides, message) => {
    let error: unknown;
    try {
      encodeSnapshot(input(overrides));
    } catch (e) {
      error = e;
    }
    expect((error as CohortError).code).toBe('INVALID_ARGUMENT');
    expect((error as Error).message).toMatch(message);
  });
});
