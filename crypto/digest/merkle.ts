import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';
import { bytesEqual } from './bytes-equal.ts';
import { sha256 } from './sha256.ts';

const LEAF_PREFIX = Uint8Array.of(0x00);
const NODE_PREFIX = Uint8Array.of(0x01);
const HASH_BYTES = 32;

function leafHash(leaf: Uint8Array): Uint8Array {
  return sha256(LEAF_PREFIX, leaf);
}

function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return sha256(NODE_PREFIX, left, right);
}

/** Largest power of two strictly below `n` (n ≥ 2): RFC 6962's split point. */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH over `hashes[start, end)`, which holds leaf hashes; end > start. */
function subtreeRoot(hashes: readonly Uint8Array[], start: number, end: number): Uint8Array {
  const n = end - start;
  if (n === 1) return hashes[start]!;
  const k = splitPoint(n);
  return nodeHash(subtreeRoot(hashes, start, start + k), subtreeRoot(hashes, start + k, end));
}

function assertLeaves(leaves: readonly Uint8Array[]): void {
  if (!Array.isArray(leaves) || !leaves.every((leaf) => leaf instanceof Uint8Array)) {
    throw new InvalidArgumentError('leaves must be an array of Uint8Array', { details: { name: 'leaves' } });
  }
}

/**
 * RFC 6962 (§2.1) Merkle Tree Hash over SHA-256: leaf = H(0x00 || leaf), node =
 * H(0x01 || left || right), a list of n > 1 leaves split at the largest power of two below n.
 * The root of an empty list is SHA-256 of the empty string, as RFC 6962 defines it.
 *
 * @returns the 32-byte root.
 */
export function merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
  assertLeaves(leaves);
  if (leaves.length === 0) return sha256();
  return subtreeRoot(leaves.map(leafHash), 0, leaves.length);
}

/**
 * RFC 6962 (§2.1.1) audit path for `leaves[index]`: the sibling subtree roots from the leaf up
 * to the root, each 32 bytes. Empty for a single-leaf tree.
 *
 * @param index - integer in [0, leaves.length).
 */
export function merkleProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
  assertLeaves(leaves);
  assertInteger('index', index, 0, leaves.length - 1);
  const hashes = leaves.map(leafHash);
  const path: Uint8Array[] = [];
  let start = 0;
  let end = hashes.length;
  let m = index;
  // Walk down from the root collecting siblings, then reverse so the path runs leaf-to-root.
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (m < k) {
      path.push(subtreeRoot(hashes, start + k, end));
      end = start + k;
    } else {
      path.push(subtreeRoot(hashes, start, start + k));
      start += k;
      m -= k;
    }
  }
  return path.reverse();
}

/**
 * Root and every leaf's audit path in one pass, O(n log n) hashes instead of O(n²) for n calls
 * of {@link merkleProof}. `proofs[i]` equals `merkleProof(leaves, i)`.
 */
export function merkleTree(leaves: readonly Uint8Array[]): { root: Uint8Array; proofs: Uint8Array[][] } {
  assertLeaves(leaves);
  if (leaves.length === 0) return { root: sha256(), proofs: [] };
  const hashes = leaves.map(leafHash);
  const proofs: Uint8Array[][] = hashes.map(() => []);
  // Children are finished before their parent appends siblings, so paths come out leaf-to-root.
  const build = (start: number, end: number): Uint8Array => {
    if (end - start === 1) return hashes[start]!;
    const mid = start + splitPoint(end - start);
    const left = build(start, mid);
    const right = build(mid, end);
    for (let i = start; i < mid; i++) proofs[i]!.push(right);
    for (let i = mid; i < end; i++) proofs[i]!.push(left);
    return nodeHash(left, right);
  };
  return { root: build(0, hashes.length), proofs };
}

/**
 * Recomputes the root implied by an RFC 6962 audit path (RFC 9162 §2.1.3.2 algorithm) for raw
 * `leaf` at `index` in a tree of `count` leaves. Use it when the root is not known up front (for
 * instance, when a signature over the root is checked next). Never throws on untrusted proof
 * content: an out-of-range index, a proof element that is not 32 bytes, or a proof of the wrong
 * length for (index, count) yields `undefined`.
 *
 * @param index - leaf position; integer ≥ 0.
 * @param count - tree size in leaves; integer ≥ 0.
 * @returns the 32-byte root, or `undefined` when the proof cannot belong to such a tree.
 */
export function merkleRootFromProof(
  leaf: Uint8Array,
  index: number,
  count: number,
  proof: readonly Uint8Array[],
): Uint8Array | undefined {
  assertInteger('index', index, 0, Number.MAX_SAFE_INTEGER);
  assertInteger('count', count, 0, Number.MAX_SAFE_INTEGER);
  // Bit operations below need 32-bit values; no real tree comes near 2^31 leaves.
  if (index >= count || count > 2 ** 31) return undefined;
  let fn = index;
  let sn = count - 1;
  let r = leafHash(leaf);
  for (const p of proof) {
    if (!(p instanceof Uint8Array) || p.length !== HASH_BYTES || sn === 0) return undefined;
    if ((fn & 1) === 1 || fn === sn) {
      r = nodeHash(p, r);
      while ((fn & 1) === 0 && fn !== 0) {
        fn >>>= 1;
        sn >>>= 1;
      }
    } else {
      r = nodeHash(r, p);
    }
    fn >>>= 1;
    sn >>>= 1;
  }
  return sn === 0 ? r : undefined;
}

/**
 * Verifies an RFC 6962 audit path for raw `leaf` at `index` in a tree of `count` leaves against
 * a known `root` (compared in constant time). Never throws on untrusted proof content: a
 * malformed proof, an out-of-range index or a wrong root all return `false`.
 *
 * @param index - leaf position; integer ≥ 0.
 * @param count - tree size in leaves; integer ≥ 0.
 */
export function verifyMerkleProof(
  leaf: Uint8Array,
  index: number,
  count: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  const computed = merkleRootFromProof(leaf, index, count, proof);
  return computed !== undefined && bytesEqual(computed, root);
}
