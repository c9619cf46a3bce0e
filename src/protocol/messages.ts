import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { BlockRejectedError } from '../errors/index.ts';

/** Path of the checked-in schema all messages are read and written with. */
export const PROTO_PATH = fileURLToPath(new URL('./cohort.proto', import.meta.url));

const root = protobuf.loadSync(PROTO_PATH);
const EncodingType = root.lookupType('cohort.v1.Encoding');
const BlockType = root.lookupType('cohort.v1.ParameterBlock');
const ManifestType = root.lookupType('cohort.v1.UpdateManifest');

/** Quantization and packing of an update; identical across all blocks of a round. */
export interface Encoding {
  bits: number;
  /** float32 value. */
  clip: number;
  laneBits: number;
  lanesPerSlot: number;
  maxContributors: number;
  scaleBits: number;
  slots: number;
  paramsPerBlock: number;
  ckksParamsId: Uint8Array;
}

/** Fields shared by every block of an update and by its manifest: what the signature covers. */
export interface UpdateHeader {
  federation: string;
  round: number;
  signer: string;
  signerKeyId: string;
  signatureAlgorithm: number;
  version: number;
  baseCommit: Uint8Array;
  blockCount: number;
  totalParams: number;
  exampleWeight: number;
  contributors: number;
  encoding: Encoding;
  crcChunkBytes: number;
  /**
   * SHA-256 of the contributor list when this is a partial aggregate (see `contributorsDigest`);
   * empty for a site's own update.
   */
  contributorsDigest: Uint8Array;
}

/** One site update folded into a partial aggregate. */
export interface Contributor {
  site: string;
  /** The site's update digest (Merkle root of its blocks). */
  digest: Uint8Array;
  weight: number;
}

/** A decoded ParameterBlock (field names as in cohort.proto, camelCased). */
export interface ParameterBlock extends UpdateHeader {
  ciphertext: Uint8Array;
  shardId: number;
  latticeSignature: Uint8Array;
  crc32: number[];
  blockIndex: number;
  paramOffset: number;
  paramCount: number;
  merklePath: Uint8Array[];
}

/** A decoded UpdateManifest. */
export interface UpdateManifest extends UpdateHeader {
  updateDigest: Uint8Array;
  signature: Uint8Array;
  /** The sites summed, for a partial aggregate; empty for a site update. */
  contributorList: Contributor[];
  /**
   * A partial aggregate's forwarded site manifests (framed, each signed by its site), in
   * `contributorList` order; empty for a site update. Not covered by the aggregator's signature.
   */
  siteManifests: Uint8Array[];
}

/** Encodes a block body (protobuf, no frame). */
export function encodeBlockBody(block: ParameterBlock): Uint8Array {
  return BlockType.encode(BlockType.fromObject(block)).finish();
}

/** Encodes a manifest body (protobuf, no frame). */
export function encodeManifestBody(manifest: UpdateManifest): Uint8Array {
  return ManifestType.encode(ManifestType.fromObject(manifest)).finish();
}

/** Decodes a block body; `MALFORMED`/`TRUNCATED`/`BAD_HEADER` on anything that is not one. */
export function decodeBlockBody(body: Uint8Array): ParameterBlock {
  const m = decodeWith(BlockType, body) as unknown as Record<string, unknown>;
  const header = readHeader(m, 'block');
  return {
    ...header,
    ciphertext: bytesField(m, 'ciphertext'),
    shardId: u32(m, 'shardId'),
    latticeSignature: bytesField(m, 'latticeSignature'),
    crc32: (m['crc32'] as number[]).slice(),
    blockIndex: u32(m, 'blockIndex'),
    paramOffset: u64(m, 'paramOffset'),
    paramCount: u32(m, 'paramCount'),
    merklePath: (m['merklePath'] as Uint8Array[]).slice(),
  };
}

/** Decodes a manifest body; `MALFORMED`/`TRUNCATED`/`BAD_HEADER` on anything that is not one. */
export function decodeManifestBody(body: Uint8Array): UpdateManifest {
  const m = decodeWith(ManifestType, body) as unknown as Record<string, unknown>;
  const list = (m['contributorList'] as Record<string, unknown>[] | undefined) ?? [];
  return {
    ...readHeader(m, 'manifest'),
    updateDigest: bytesField(m, 'updateDigest'),
    signature: bytesField(m, 'signature'),
    contributorList: list.map((c) => ({
      site: c['site'] as string,
      digest: bytesField(c, 'digest'),
      weight: c['weight'] as number,
    })),
    siteManifests: ((m['siteManifests'] as Uint8Array[] | undefined) ?? []).slice(),
  };
}

function decodeWith(type: protobuf.Type, body: Uint8Array): protobuf.Message {
  try {
    return type.decode(body);
  } catch (cause) {
    // Inside a length-checked frame a short read can only come from a corrupt inner length.
    throw new BlockRejectedError('MALFORMED', `body is not a ${type.name}: ${(cause as Error).message}`, {
      cause,
    });
  }
}

function readHeader(m: Record<string, unknown>, what: string): UpdateHeader {
  const enc = m['encoding'] as Record<string, unknown> | null | undefined;
  if (!enc) throw new BlockRejectedError('BAD_HEADER', `${what} has no encoding`);
  return {
    federation: m['federation'] as string,
    round: u64(m, 'round'),
    signer: m['signer'] as string,
    signerKeyId: m['signerKeyId'] as string,
    signatureAlgorithm: u32(m, 'signatureAlgorithm'),
    version: u64(m, 'version'),
    baseCommit: bytesField(m, 'baseCommit'),
    blockCount: u32(m, 'blockCount'),
    totalParams: u64(m, 'totalParams'),
    exampleWeight: m['exampleWeight'] as number,
    contributors: u32(m, 'contributors'),
    crcChunkBytes: u32(m, 'crcChunkBytes'),
    contributorsDigest: bytesField(m, 'contributorsDigest'),
    encoding: {
      bits: u32(enc, 'bits'),
      clip: enc['clip'] as number,
      laneBits: u32(enc, 'laneBits'),
      lanesPerSlot: u32(enc, 'lanesPerSlot'),
      maxContributors: u32(enc, 'maxContributors'),
      scaleBits: u32(enc, 'scaleBits'),
      slots: u32(enc, 'slots'),
      paramsPerBlock: u32(enc, 'paramsPerBlock'),
      ckksParamsId: bytesField(enc, 'ckksParamsId'),
    },
  };
}

function u32(m: Record<string, unknown>, key: string): number {
  return (m[key] as number) >>> 0;
}

function u64(m: Record<string, unknown>, key: string): number {
  const v = m[key] as number | { toNumber(): number; high: number } | undefined;
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  if (v.high >= 0x200000) {
    throw new BlockRejectedError('BAD_HEADER', `${key} does not fit in 53 bits`);
  }
  return v.toNumber();
}

function bytesField(m: Record<string, unknown>, key: string): Uint8Array {
  const v = m[key] as Uint8Array | undefined;
  return v ?? new Uint8Array(0);
}

/** The protobufjs types, for tests and tools (e.g. checking an encoding by reflection). */
export const protoTypes = Object.freeze({
  Encoding: EncodingType,
  ParameterBlock: BlockType,
  UpdateManifest: ManifestType,
});
