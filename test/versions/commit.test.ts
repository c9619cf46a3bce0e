import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors/index.ts';
import {
  bytesToHex,
  COMMIT_HEADER_BYTES,
  type Commit,
  createCommit,
  decodeCommit,
  encodeCommit,
  genesisCommit,
  modelHash,
  rollbackCommit,
  roundCommit,
  verifyCommit,
  ZERO_HASH,
} from '../../src/versions/index.ts';
import { errorCode } from '../helpers/error-code.ts';

const W0 = new Float32Array([1, -0.5, 0.25, 3]);
const W1 = new Float32Array([2, 0, 0.5, -1]);
const PARAMS = new TextEncoder().encode('fedavg;b=4');
const AGG = new Uint8Array(32).fill(0xab);

/** Independent reconstruction of the canonical strings, from the documented layout. */
function str(s: string): Buffer {
  return bytes(Buffer.from(s, 'utf8'));
}
function bytes(b: Uint8Array): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}
function u64(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
function sha(...parts: Uint8Array[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

describe('modelHash', () => {
  it('matches the pinned known answer and the documented preimage', () => {
    const floats = Buffer.alloc(16);
    [1, -0.5, 0.25, 3].forEach((v, i) => {
      floats.writeFloatLE(v, i * 4);
    });
    const expected = '9329907f43ea71ee2015c60618226bf05a4cafd0ae5b5a726df7c9692142dc58';
    expect(sha(str('cohort/v1/model'), u64(4), floats)).toBe(expected);
    expect(bytesToHex(modelHash(W0))).toBe(expected);
  });

  it('distinguishes −0 from 0, length, and refuses non-finite values', () => {
    expect(bytesToHex(modelHash(new Float32Array([0])))).not.toBe(
      bytesToHex(modelHash(new Float32Array([-0]))),
    );
    expect(bytesToHex(modelHash(new Float32Array([])))).not.toBe(
      bytesToHex(modelHash(new Float32Array([0]))),
    );
    expect(() => modelHash(new Float32Array([1, Number.NaN]))).toThrow(/parameters\[1\]/);
    expect(() => modelHash([1, 2] as unknown as Float32Array)).toThrow(InvalidArgumentError);
  });
});

describe('commitHash', () => {
  it('matches the pinned known answer and the documented preimage (genesis)', () => {
    const g = genesisCommit(W0, PARAMS);
    const expected = '63193c2ac407ed65736e633b2fe1eb8a0f250104ab05e83dc06984d4e18ebe2a';
    const preimage = [
      str('cohort/v1/commit'),
      str('genesis'),
      bytes(ZERO_HASH),
      u64(0),
      u64(0),
      bytes(ZERO_HASH),
      bytes(modelHash(W0)),
      bytes(PARAMS),
    ];
    expect(sha(...preimage)).toBe(expected);
    expect(bytesToHex(g.hash)).toBe(expected);
    expect(g).toMatchObject({ height: 0, round: 0, kind: 'genesis', parent: ZERO_HASH });
    expect(verifyCommit(g)).toBe(true);
  });

  it('pins a round commit and links parents through a chain', () => {
    const g = genesisCommit(W0, PARAMS);
    const c1 = roundCommit(g, { round: 1, aggregateDigest: AGG, modelHash: modelHash(W1), params: PARAMS });
    expect(bytesToHex(c1.hash)).toBe('bb5bcdfd0834dabef61957953246e5c8d96198746f9e97778ef4a6cd06f5db3a');
    const c2 = roundCommit(c1, { round: 2, aggregateDigest: AGG, modelHash: modelHash(W0), params: PARAMS });
    expect(c1.parent).toEqual(g.hash);
    expect(c2.parent).toEqual(c1.hash);
    expect([c1.height, c2.height]).toEqual([1, 2]);
    expect(new Set([g, c1, c2].map((c) => bytesToHex(c.hash))).size).toBe(3);
  });

  it('builds a rollback commit: other hash, same model hash, zero aggregate', () => {
    const g = genesisCommit(W0, PARAMS);
    const c1 = roundCommit(g, { round: 1, aggregateDigest: AGG, modelHash: modelHash(W1), params: PARAMS });
    const rb = rollbackCommit(c1, g, 2);
    expect(rb.kind).toBe('rollback');
    expect(rb.modelHash).toEqual(g.modelHash);
    expect(rb.hash).not.toEqual(g.hash);
    expect(rb.parent).toEqual(c1.hash);
    expect(rb.aggregateDigest).toEqual(ZERO_HASH);
    expect(verifyCommit(rb)).toBe(true);
  });

  it('refuses fields that break the invariants, naming the field', () => {
    const g = genesisCommit(W0, PARAMS);
    expect(() => createCommit({ ...g, parent: new Uint8Array(31) })).toThrow(/fields\.parent length 31/);
    expect(() => createCommit({ ...g, height: 1 })).toThrow(/fields\.height of a genesis commit/);
    expect(() => createCommit({ ...g, kind: 'round' })).toThrow(/fields\.parent of a round commit/);
    expect(() => createCommit({ ...g, round: -1 })).toThrow(/fields\.round/);
    expect(() => createCommit({ ...g, kind: 'merge' as never })).toThrow(/fields\.kind/);
    expect(() =>
      createCommit({ ...g, kind: 'rollback', parent: AGG, height: 1, aggregateDigest: AGG }),
    ).toThrow(/aggregateDigest of a rollback commit/);
  });

  it('verifyCommit detects any tampered field', () => {
    const g = genesisCommit(W0, PARAMS);
    const c1 = roundCommit(g, { round: 1, aggregateDigest: AGG, modelHash: modelHash(W1), params: PARAMS });
    const tampered: Commit[] = [
      { ...c1, round: 2 },
      { ...c1, height: 2 },
      { ...c1, modelHash: g.modelHash },
      { ...c1, params: new Uint8Array([1]) },
      { ...c1, aggregateDigest: new Uint8Array(32).fill(1) },
    ];
    for (const t of tampered) expect(verifyCommit(t)).toBe(false);
    expect(verifyCommit(null as unknown as Commit)).toBe(false);
  });
});

describe('encodeCommit / decodeCommit', () => {
  const g = genesisCommit(W0, PARAMS);
  const c1 = roundCommit(g, { round: 7, aggregateDigest: AGG, modelHash: modelHash(W1), params: PARAMS });

  it('round-trips every kind', () => {
    for (const c of [g, c1, rollbackCommit(c1, g, 8, new Uint8Array())]) {
      const bytes = encodeCommit(c);
      expect(bytes.length).toBe(COMMIT_HEADER_BYTES + c.params.length);
      const back = decodeCommit(bytes);
      expect(back).toEqual(c);
      expect(encodeCommit(back)).toEqual(bytes);
    }
  });

  it('refuses a commit whose hash does not verify', () => {
    expect(() => encodeCommit({ ...c1, round: 9 })).toThrow(/commit\.hash/);
  });

  it('refuses truncated, padded, mis-tagged or tampered bytes', () => {
    const bytes = encodeCommit(c1);
    expect(errorCode(() => decodeCommit(bytes.subarray(0, bytes.length - 1)))).toBe('COMMIT_MALFORMED');
    expect(errorCode(() => decodeCommit(new Uint8Array([...bytes, 0])))).toBe('COMMIT_MALFORMED');
    expect(errorCode(() => decodeCommit(bytes.subarray(0, 10)))).toBe('COMMIT_MALFORMED');
    const patch = (offset: number, value: number): Uint8Array => {
      const copy = bytes.slice();
      copy[offset] = value;
      return copy;
    };
    expect(errorCode(() => decodeCommit(patch(0, 0)))).toBe('COMMIT_MALFORMED'); // magic
    expect(errorCode(() => decodeCommit(patch(4, 2)))).toBe('COMMIT_MALFORMED'); // version
    expect(errorCode(() => decodeCommit(patch(5, 9)))).toBe('COMMIT_MALFORMED'); // kind
    expect(errorCode(() => decodeCommit(patch(6, 1)))).toBe('COMMIT_MALFORMED'); // reserved
    expect(errorCode(() => decodeCommit(patch(79, 0xff)))).toBe('COMMIT_MALFORMED'); // height > 2^53
    expect(errorCode(() => decodeCommit(patch(bytes.length - 1, 0)))).toBe('COMMIT_HASH_MISMATCH');
    expect(errorCode(() => decodeCommit(patch(8, bytes[8]! ^ 1)))).toBe('COMMIT_HASH_MISMATCH');
  });

  it('returns arrays that do not alias the input', () => {
    const bytes = encodeCommit(c1);
    const back = decodeCommit(bytes);
    bytes.fill(0);
    expect(verifyCommit(back)).toBe(true);
  });
});
