import { createHash } from 'node:crypto';
import { CanonicalWriter } from './canonical-writer.ts';
import type { Contributor, Encoding, UpdateHeader } from './messages.ts';
import { WIRE_VERSION } from './wire-frame.ts';

/** Signature domain of a site's update statement (see `signingMessage` in crypto/signature). */
export const UPDATE_SIGNATURE_DOMAIN = 'parameter-update';

/** Signature domain of a partial aggregate's statement: never valid as a site update, nor the reverse. */
export const PARTIAL_SIGNATURE_DOMAIN = 'partial-aggregate';

/**
 * The signature domain of an update with this header: a partial aggregate (non-empty contributors
 * digest) signs under {@link PARTIAL_SIGNATURE_DOMAIN}, a site's own update under
 * {@link UPDATE_SIGNATURE_DOMAIN}.
 */
export function updateSignatureDomain(header: Pick<UpdateHeader, 'contributorsDigest'>): string {
  return header.contributorsDigest.length > 0 ? PARTIAL_SIGNATURE_DOMAIN : UPDATE_SIGNATURE_DOMAIN;
}

function writeEncoding(w: CanonicalWriter, e: Encoding): void {
  w.u8(e.bits)
    .f32(e.clip)
    .u8(e.laneBits)
    .u8(e.lanesPerSlot)
    .u32(e.maxContributors)
    .u8(e.scaleBits)
    .u32(e.slots)
    .u32(e.paramsPerBlock)
    .bytes(e.ckksParamsId);
}

/**
 * The byte string an update's one signature covers: every update-wide header field (so a block
 * cannot be replayed into another federation, round, base commit or encoding) and the Merkle root
 * over the blocks' leaves. Blocks and manifest carry the same signature.
 */
export function updateStatement(header: UpdateHeader, merkleRoot: Uint8Array): Uint8Array {
  const w = new CanonicalWriter()
    .u8(WIRE_VERSION)
    .str(header.federation)
    .u64(header.round)
    .str(header.signer)
    .str(header.signerKeyId)
    .u8(header.signatureAlgorithm)
    .u64(header.version)
    .bytes(header.baseCommit)
    .u32(header.blockCount)
    .u64(header.totalParams)
    .f64(header.exampleWeight)
    .u32(header.contributors)
    .u32(header.crcChunkBytes)
    .bytes(header.contributorsDigest);
  writeEncoding(w, header.encoding);
  return w.bytes(merkleRoot).finish();
}

/** Per-block fields hashed into the block's Merkle leaf. */
export interface BlockLeafFields {
  blockIndex: number;
  shardId: number;
  paramOffset: number;
  paramCount: number;
}

/**
 * Leaf data of one block: its position fields and the SHA-256 of its ciphertext. The Merkle tree
 * (RFC 6962) adds its own 0x00 leaf prefix.
 */
export function blockLeaf(fields: BlockLeafFields, ciphertext: Uint8Array): Uint8Array {
  const digest = createHash('sha256').update(ciphertext).digest();
  return new CanonicalWriter()
    .u32(fields.blockIndex)
    .u32(fields.shardId)
    .u64(fields.paramOffset)
    .u32(fields.paramCount)
    .bytes(digest)
    .finish();
}

/**
 * SHA-256 of a partial aggregate's contributor list (site, digest, weight of each, in order):
 * the header field the aggregator's signature covers, so the list in the manifest cannot be
 * altered without breaking it.
 */
export function contributorsDigest(list: readonly Contributor[]): Uint8Array {
  const w = new CanonicalWriter().u32(list.length);
  for (const c of list) w.str(c.site).bytes(c.digest).f64(c.weight);
  return new Uint8Array(createHash('sha256').update('cohort/v1/contributors\0').update(w.finish()).digest());
}
