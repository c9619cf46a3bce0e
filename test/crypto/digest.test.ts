import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesEqual,
  chunkCrc32s,
  crc32,
  merkleProof,
  merkleRoot,
  merkleRootFromProof,
  merkleTree,
  sha256,
  sha256Hex,
  verifyChunkCrc32s,
  verifyMerkleProof,
} from '../../crypto/digest/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';

const utf8 = (s: string) => new TextEncoder().encode(s);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const fromHex = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));

/** Independent SHA-256 for hand-composing expected values. */
const h = (...parts: Uint8Array[]) => {
  const hash = createHash('sha256');
  for (const p of parts) hash.update(p);
  return new Uint8Array(hash.digest());
};
const leafH = (d: Uint8Array) => h(Uint8Array.of(0), d);
const nodeH = (l: Uint8Array, r: Uint8Array) => h(Uint8Array.of(1), l, r);

describe('sha256', () => {
  it('matches the FIPS 180-2 "abc" vector', () => {
    expect(sha256Hex(utf8('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hex(sha256(utf8('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('hashes the empty input and no parts alike', () => {
    const empty = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    expect(sha256Hex()).toBe(empty);
    expect(sha256Hex(new Uint8Array(0))).toBe(empty);
  });

  it('hashes parts as their concatenation and returns a plain 32-byte Uint8Array', () => {
    const d = sha256(utf8('a'), utf8('b'), utf8('c'));
    expect(d).toEqual(sha256(utf8('abc')));
    expect(d.length).toBe(32);
    expect(Buffer.isBuffer(d)).toBe(false);
  });
});

describe('crc32', () => {
  it('matches the CRC-32/ISO-HDLC check value for "123456789"', () => {
    expect(crc32(utf8('123456789'))).toBe(0xcbf43926);
  });

  it('is unsigned', () => {
    expect(crc32(utf8('123456789'))).toBeGreaterThan(0);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });
});

describe('chunkCrc32s / verifyChunkCrc32s', () => {
  const data = new Uint8Array(1000).map((_, i) => (i * 31) & 0xff);

  it('emits one CRC per chunk with a short last chunk', () => {
    const crcs = chunkCrc32s(data, 256);
    expect(crcs).toHaveLength(4);
    expect(crcs[0]).toBe(crc32(data.subarray(0, 256)));
    expect(crcs[3]).toBe(crc32(data.subarray(768)));
    expect(chunkCrc32s(data, 1000)).toEqual([crc32(data)]);
    expect(chunkCrc32s(new Uint8Array(0), 16)).toEqual([]);
  });

  it('validates chunkSize', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      expect(() => chunkCrc32s(data, bad)).toThrow(InvalidArgumentError);
      expect(() => verifyChunkCrc32s(data, bad, [])).toThrow(InvalidArgumentError);
    }
    expect(() => chunkCrc32s(data, 0)).toThrow(/chunkSize/);
  });

  it('returns -1 when every chunk matches, else the first bad chunk', () => {
    const crcs = chunkCrc32s(data, 100);
    expect(verifyChunkCrc32s(data, 100, crcs)).toBe(-1);
    const corrupt = data.slice();
    corrupt[350]! ^= 0x01;
    corrupt[720]! ^= 0x80;
    expect(verifyChunkCrc32s(corrupt, 100, crcs)).toBe(3);
  });

  it('reports a count mismatch at min(count, expected)', () => {
    const crcs = chunkCrc32s(data, 100);
    expect(verifyChunkCrc32s(data, 100, crcs.slice(0, 7))).toBe(7);
    expect(verifyChunkCrc32s(data, 100, [...crcs, 0])).toBe(10);
    expect(verifyChunkCrc32s(data.subarray(0, 250), 100, crcs)).toBe(2);
    expect(verifyChunkCrc32s(new Uint8Array(0), 100, [])).toBe(-1);
  });

  it('finds any single flipped bit (property)', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 600 }),
        fc.integer({ min: 1, max: 128 }),
        fc.nat(),
        fc.integer({ min: 0, max: 7 }),
        (bytes, chunkSize, pos, bit) => {
          const crcs = chunkCrc32s(bytes, chunkSize);
          const i = pos % bytes.length;
          const corrupt = bytes.slice();
          corrupt[i]! ^= 1 << bit;
          return verifyChunkCrc32s(corrupt, chunkSize, crcs) === Math.floor(i / chunkSize);
        },
      ),
    );
  });
});

describe('bytesEqual', () => {
  it('compares contents and lengths', () => {
    expect(bytesEqual(utf8('abc'), utf8('abc'))).toBe(true);
    expect(bytesEqual(utf8('abc'), utf8('abd'))).toBe(false);
    expect(bytesEqual(utf8('abc'), utf8('ab'))).toBe(false);
    expect(bytesEqual(new Uint8Array(0), new Uint8Array(0))).toBe(true);
  });
});

describe('merkle (RFC 6962)', () => {
  // The eight inputs of the certificate-transparency reference tests (merkle_tree_test.cc).
  const ctLeaves = [
    '',
    '00',
    '10',
    '2021',
    '3031',
    '40414243',
    '5051525354555657',
    '606162636465666768696a6b6c6d6e6f',
  ].map(fromHex);
  const ctRoots = [
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
    'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
    'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
    '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
    '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
    'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
    '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
  ];

  it('matches the certificate-transparency reference roots for 1..8 leaves', () => {
    ctRoots.forEach((root, i) => {
      expect(hex(merkleRoot(ctLeaves.slice(0, i + 1)))).toBe(root);
    });
  });

  it('matches a hand-composed 5-leaf tree (odd node promoted, split at 4)', () => {
    const d = ['a', 'b', 'c', 'd', 'e'].map(utf8);
    const l = d.map(leafH);
    const left = nodeH(nodeH(l[0]!, l[1]!), nodeH(l[2]!, l[3]!));
    const expected = nodeH(left, l[4]!);
    expect(merkleRoot(d)).toEqual(expected);
    expect(hex(merkleRoot(d))).toBe('fe14a5426fbd70c0fa73f52342afed0da0bd23c4838662ccf6b88a3070ead97b');
    expect(merkleProof(d, 4)).toEqual([left]);
    expect(merkleProof(d, 2)).toEqual([l[3]!, nodeH(l[0]!, l[1]!), l[4]!]);
  });

  it('defines the empty tree as SHA-256("") and a single leaf as its leaf hash', () => {
    expect(sha256Hex(merkleRoot([]))).toBe(sha256Hex(sha256()));
    expect(merkleRoot([])).toEqual(sha256());
    expect(merkleRoot([utf8('x')])).toEqual(leafH(utf8('x')));
    expect(merkleProof([utf8('x')], 0)).toEqual([]);
  });

  it('rejects an out-of-range proof index', () => {
    expect(() => merkleProof([utf8('a')], 1)).toThrow(InvalidArgumentError);
    expect(() => merkleProof([], 0)).toThrow(InvalidArgumentError);
    expect(() => merkleProof([utf8('a')], -1)).toThrow(InvalidArgumentError);
  });

  it('verifies every index for sizes 1..17 and fails when any byte changes', () => {
    for (let n = 1; n <= 17; n++) {
      const leaves = Array.from({ length: n }, (_, i) => utf8(`leaf-${n}-${i}`));
      const root = merkleRoot(leaves);
      for (let i = 0; i < n; i++) {
        const leaf = leaves[i]!;
        const proof = merkleProof(leaves, i);
        expect(verifyMerkleProof(leaf, i, n, proof, root)).toBe(true);
        expect(merkleRootFromProof(leaf, i, n, proof)).toEqual(root);

        for (let j = 0; j < leaf.length; j++) {
          const bad = leaf.slice();
          bad[j]! ^= 0x01;
          expect(verifyMerkleProof(bad, i, n, proof, root)).toBe(false);
        }
        for (let j = 0; j < root.length; j++) {
          const bad = root.slice();
          bad[j]! ^= 0x01;
          expect(verifyMerkleProof(leaf, i, n, proof, bad)).toBe(false);
        }
        proof.forEach((node, p) => {
          for (let j = 0; j < node.length; j++) {
            const badNode = node.slice();
            badNode[j]! ^= 0x01;
            const bad = proof.map((x, q) => (q === p ? badNode : x));
            expect(verifyMerkleProof(leaf, i, n, bad, root)).toBe(false);
          }
        });
        if (n > 1) expect(verifyMerkleProof(leaf, (i + 1) % n, n, proof, root)).toBe(false);
        expect(verifyMerkleProof(leaf, i, n, [...proof, root], root)).toBe(false);
        if (proof.length > 0) expect(verifyMerkleProof(leaf, i, n, proof.slice(1), root)).toBe(false);
      }
    }
  });

  it('returns false (does not throw) for malformed proofs and out-of-range positions', () => {
    const leaves = [utf8('a'), utf8('b'), utf8('c')];
    const root = merkleRoot(leaves);
    const proof = merkleProof(leaves, 1);
    expect(verifyMerkleProof(leaves[1]!, 3, 3, proof, root)).toBe(false);
    expect(verifyMerkleProof(leaves[1]!, 1, 0, proof, root)).toBe(false);
    expect(verifyMerkleProof(leaves[1]!, 1, 3, [proof[0]!.subarray(1), proof[1]!], root)).toBe(false);
    expect(verifyMerkleProof(leaves[1]!, 1, 3, proof, root.subarray(1))).toBe(false);
    expect(() => verifyMerkleProof(leaves[1]!, 0.5, 3, proof, root)).toThrow(InvalidArgumentError);
    expect(merkleRootFromProof(leaves[1]!, 1, 3, proof)).toEqual(root);
    expect(merkleRootFromProof(leaves[1]!, 3, 3, proof)).toBeUndefined();
    expect(merkleRootFromProof(leaves[1]!, 1, 3, proof.slice(1))).toBeUndefined();
    expect(merkleRootFromProof(leaves[1]!, 1, 3, [...proof, root])).toBeUndefined();
    expect(merkleRootFromProof(leaves[1]!, 1, 3, [proof[0]!, new Uint8Array(31)])).toBeUndefined();
  });

  it('verifies random trees and rejects any flipped proof bit (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 24 }), { minLength: 2, maxLength: 70 }),
        fc.nat(),
        fc.nat(),
        fc.nat(),
        (leaves, rawIndex, rawNode, rawBit) => {
          const index = rawIndex % leaves.length;
          const root = merkleRoot(leaves);
          const proof = merkleProof(leaves, index);
          if (!verifyMerkleProof(leaves[index]!, index, leaves.length, proof, root)) return false;
          const p = rawNode % proof.length;
          const bit = rawBit % 256;
          const bad = proof.map((x) => x.slice());
          bad[p]![bit >> 3]! ^= 1 << (bit & 7);
          return !verifyMerkleProof(leaves[index]!, index, leaves.length, bad, root);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('merkleTree', () => {
  it('gives the same root and paths as merkleRoot and merkleProof, for 1..40 leaves', () => {
    for (let n = 1; n <= 40; n++) {
      const leaves = Array.from({ length: n }, (_, i) => Uint8Array.of(i, n, 7));
      const tree = merkleTree(leaves);
      expect(Buffer.from(tree.root).equals(Buffer.from(merkleRoot(leaves)))).toBe(true);
      for (let i = 0; i < n; i++) {
        expect(tree.proofs[i]!.map((p) => Buffer.from(p).toString('hex'))).toEqual(
          merkleProof(leaves, i).map((p) => Buffer.from(p).toString('hex')),
        );
      }
    }
  });
});
