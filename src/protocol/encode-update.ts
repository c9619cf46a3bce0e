import { randomBytes } from 'node:crypto';
import { chunkCrc32s, merkleTree } from '../../crypto/digest/index.ts';
import { type LaneKeyset, packLanes } from '../../crypto/lanes/index.ts';
import { SIGNATURE_ALGORITHM_IDS, type SigningKeyPair, sign } from '../../crypto/signature/index.ts';
import { quantize } from '../../federation/index.ts';
import { assertFiniteArray, InvalidArgumentError } from '../errors/index.ts';
import { type RoundMac, UpdateTagger } from './aggregate-mac.ts';
import { type CodecOptions, codecEncoding } from './codec-options.ts';
import { runSteps, runStepsYielding, STEP_SLICE_MS, type Steps } from './cooperative-steps.ts';
import { type CryptoTimingObserver, reportCkks } from './crypto-observer.ts';
import {
  type Contributor,
  encodeBlockBody,
  encodeManifestBody,
  type ParameterBlock,
  type UpdateHeader,
  type UpdateManifest,
} from './messages.ts';
import { payloadPositionLabel } from './payload-position.ts';
import { assertRoundContext, type RoundContext } from './round-context.ts';
import { updateLayout } from './update-layout.ts';
import { blockLeaf, contributorsDigest, updateSignatureDomain, updateStatement } from './update-statement.ts';
import { FRAME_KIND, frame } from './wire-frame.ts';

/** What a site needs to emit an update. */
export interface SiteCredentials {
  /** Site id, as registered with the federation. */
  readonly signer: string;
  /** The federation's CKKS keyset (secret key shared by sites). */
  readonly ckks: LaneKeyset;
  /**
   * The round's aggregate MAC (the key only sites hold, bound to the round and its attempt): the
   * update carries its tag, so a sum that is not exactly the listed updates fails to decode.
   */
  readonly mac: RoundMac;
  /** The site's own lattice signing key. */
  readonly signing: SigningKeyPair;
}

/** Input of {@link encodeUpdate}. */
export interface EncodeUpdateInput {
  /** The model update u = Δw (float32, finite). */
  readonly update: Float32Array;
  /** Error-feedback residual from earlier rounds, same length, or null for none. Not modified. */
  readonly residual: Float32Array | null;
  readonly credentials: SiteCredentials;
  readonly context: RoundContext;
  readonly options: CodecOptions;
  /** Examples behind the update (FedAvg weight); finite, ≥ 0. */
  readonly exampleWeight: number;
  /**
   * Key of the stochastic-rounding generator (two uint32). Default: key0 random, key1 = round.
   * Fixing it makes the emitted integers reproducible (and comparable with the GPU quantizer).
   */
  readonly roundingSeed?: { readonly key0: number; readonly key1: number };
  /**
   * Levels appended after the quantized parameters, packed as they are (each in [0, 2^bits)): the
   * site's evaluation lanes (see `evaluationLevels`). They count in the update's `totalParams`.
   */
  readonly extraLevels?: Uint8Array;
  /** Reports each block's CKKS encryption (`encrypt`); for metrics. */
  readonly timings?: CryptoTimingObserver;
}

/** Output of {@link encodeUpdate}. */
export interface EncodedUpdate {
  /** Framed ParameterBlocks, in block-index order. */
  readonly blocks: Uint8Array[];
  /** Framed UpdateManifest closing the update. */
  readonly manifest: Uint8Array;
  /** New residual e = u + e_prev − dequant(q); keep it (persisted) for the next round. */
  readonly residual: Float32Array;
  /** Merkle root over the blocks: the update digest aggregators list for contributors. */
  readonly digest: Uint8Array;
  /** Quantized levels that were packed (for tests and cross-engine checks). */
  readonly levels: Uint8Array;
}

/**
 * Site pipeline: quantize (error feedback) → pack lanes → CKKS-encrypt (seeded, last level) →
 * frame into ParameterBlocks with CRC32s → sign once over the Merkle root of all blocks → manifest.
 *
 * Each block carries the update signature and its Merkle audit path, so every hop verifies every
 * block on its own; the lattice signature is computed once per update rather than once per block.
 */
export function encodeUpdate(input: EncodeUpdateInput): EncodedUpdate {
  return runSteps(encodeUpdateSteps(input));
}

/**
 * {@link encodeUpdate}, sharing the event loop: it yields every {@link STEP_SLICE_MS} of work (a
 * large model's encryption takes seconds), so the site's heartbeats, log reads and connection stay
 * live meanwhile. Same result, same errors.
 */
export function encodeUpdateYielding(input: EncodeUpdateInput): Promise<EncodedUpdate> {
  return runStepsYielding(encodeUpdateSteps(input));
}

/** {@link encodeUpdate} as steps: one per encrypted block. */
function* encodeUpdateSteps(input: EncodeUpdateInput): Steps<EncodedUpdate> {
  const { update, residual, credentials, context, options, exampleWeight } = input;
  assertRoundContext(context);
  if (!(update instanceof Float32Array)) throw new InvalidArgumentError('update must be a Float32Array');
  if (update.length === 0 && (input.extraLevels?.length ?? 0) === 0) {
    throw new InvalidArgumentError('update is empty');
  }
  if (residual !== null && residual.length !== update.length) {
    throw new InvalidArgumentError(`residual length ${residual.length}, update has ${update.length}`);
  }
  if (!Number.isFinite(exampleWeight) || exampleWeight < 0) {
    throw new InvalidArgumentError(`exampleWeight ${exampleWeight} must be finite and ≥ 0`);
  }
  assertFiniteArray('update', update);
  if (residual) assertFiniteArray('residual', residual);
  const extra = input.extraLevels ?? new Uint8Array(0);
  if (!(extra instanceof Uint8Array)) throw new InvalidArgumentError('extraLevels must be a Uint8Array');
  const levelLimit = 2 ** options.bits;
  const badLevel = extra.findIndex((v) => v >= levelLimit);
  if (badLevel >= 0) {
    throw new InvalidArgumentError(
      `extraLevels[${badLevel}] is ${extra[badLevel]}, ${options.bits}-bit lanes hold at most ${levelLimit - 1}`,
    );
  }

  const ckks = credentials.ckks;
  const encoding = codecEncoding(ckks.ctx, options);
  const shardCount = options.shardCount ?? 1;
  const totalParams = update.length + extra.length;
  const geometry = updateLayout(totalParams, encoding);
  if (
    credentials.mac.nonce.federation !== context.federation ||
    credentials.mac.nonce.round !== context.round
  ) {
    throw new InvalidArgumentError('credentials.mac is bound to another federation or round than context');
  }
  const seed = input.roundingSeed ?? { key0: randomBytes(4).readUInt32BE(0), key1: context.round >>> 0 };

  const q = quantize(update, residual, { bits: options.bits, clip: encoding.clip, seed, counterBase: 0 });

  const layout = {
    bits: encoding.bits,
    maxContributors: encoding.maxContributors,
    exactBits: ckks.ctx.params.exactBits,
    laneBits: encoding.laneBits,
    lanesPerSlot: encoding.lanesPerSlot,
    maxLaneSum: encoding.maxContributors * (2 ** encoding.bits - 1),
  };

  // The parameters' levels, then the extra lanes; the data slots end with the last of them and the
  // tag's limbs follow (`updateLayout`).
  const levels = new Uint8Array(totalParams);
  levels.set(q.levels, 0);
  levels.set(extra, update.length);
  const slots = new Float64Array(encoding.slots);
  // One position per block of this round attempt: threshold encryption never reuses one.
  const position = payloadPositionLabel(credentials.mac.nonce);
  const tagger = new UpdateTagger(credentials.mac, geometry, credentials.signer);
  const ciphertexts: Uint8Array[] = [];
  try {
    for (let b = 0; b < geometry.blocks; b++) {
      const offset = b * geometry.lanesPerBlock;
      const count = Math.max(0, Math.min(geometry.lanesPerBlock, totalParams - offset));
      if (count > 0) packLanes(levels, offset, count, layout, slots);
      else slots.fill(0);
      tagger.block(b, slots);
      const started = input.timings === undefined ? 0 : performance.now();
      ciphertexts.push(ckks.encrypt(slots, { label: position, index: b }));
      reportCkks(input.timings, 'encrypt', started);
      yield;
    }
  } finally {
    // Also when the steps are abandoned midway: the plaintext levels never outlive the encoding.
    levels.fill(0);
    slots.fill(0);
  }
  const signed = signBlocks(
    context,
    credentials.signer,
    credentials.signing,
    { totalParams, exampleWeight, encoding, crcChunkBytes: options.crcChunkBytes },
    ciphertexts,
    shardCount,
    [],
  );
  return { ...signed, residual: q.residual, levels: q.levels };
}

/** Framed, signed blocks and manifest of one update (a site's, or an aggregator's partial sum). */
export interface SignedBlocks {
  readonly blocks: Uint8Array[];
  readonly manifest: Uint8Array;
  readonly digest: Uint8Array;
}

/**
 * Frames ciphertexts as ParameterBlocks of one update in `context`, signed by `signer`: one block
 * per ciphertext (geometry from the encoding), the Merkle tree over their leaves, one signature over
 * the update statement, and the closing manifest. A non-empty `contributorList` makes it a partial
 * aggregate (contributors = its length, its SHA-256 in the signed header); empty, a site's own update.
 */
export function signBlocks(
  context: RoundContext,
  signer: string,
  signing: SigningKeyPair,
  fields: Pick<UpdateHeader, 'totalParams' | 'exampleWeight' | 'encoding' | 'crcChunkBytes'>,
  ciphertexts: readonly Uint8Array[],
  shardCount: number,
  contributorList: Contributor[],
  siteManifests: readonly Uint8Array[] = [],
): SignedBlocks {
  const header: UpdateHeader = {
    federation: context.federation,
    round: context.round,
    signer,
    signerKeyId: signing.keyId,
    signatureAlgorithm: SIGNATURE_ALGORITHM_IDS[signing.algorithm],
    version: context.version,
    baseCommit: context.baseCommit,
    blockCount: ciphertexts.length,
    contributors: Math.max(1, contributorList.length),
    contributorsDigest: contributorList.length > 0 ? contributorsDigest(contributorList) : new Uint8Array(0),
    ...fields,
  };
  const perBlock = header.encoding.paramsPerBlock;
  const lanes = updateLayout(header.totalParams, header.encoding).lanes;
  const geometry = ciphertexts.map((_, b) => ({
    blockIndex: b,
    shardId: b % shardCount,
    paramOffset: b * perBlock,
    paramCount: Math.min(perBlock, lanes - b * perBlock),
  }));
  const leaves = ciphertexts.map((ct, b) => blockLeaf(geometry[b]!, ct));
  const { root, proofs } = merkleTree(leaves);
  const signature = sign(signing, updateSignatureDomain(header), updateStatement(header, root));
  const blocks = ciphertexts.map((ciphertext, b) => {
    const block: ParameterBlock = {
      ...header,
      ...geometry[b]!,
      ciphertext,
      latticeSignature: signature,
      crc32: chunkCrc32s(ciphertext, header.crcChunkBytes),
      merklePath: proofs[b]!,
    };
    return frame(FRAME_KIND.block, encodeBlockBody(block));
  });
  const manifest: UpdateManifest = {
    ...header,
    updateDigest: root,
    signature,
    contributorList,
    siteManifests: [...siteManifests],
  };
  return { blocks, manifest: frame(FRAME_KIND.manifest, encodeManifestBody(manifest)), digest: root };
}
