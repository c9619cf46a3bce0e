import { createHash } from 'node:crypto';
import { merkleRootFromProof, verifyChunkCrc32s } from '../../crypto/digest/index.ts';
import {
  type PublicSigningKey,
  SIGNATURE_ALGORITHM_IDS,
  type SignatureAlgorithm,
  verify,
} from '../../crypto/signature/index.ts';
import { BlockRejectedError, InvalidArgumentError } from '../errors/index.ts';
import { sameEncoding } from './codec-options.ts';
import {
  decodeBlockBody,
  decodeManifestBody,
  type Encoding,
  type ParameterBlock,
  type UpdateHeader,
  type UpdateManifest,
} from './messages.ts';
import { RejectionCounters } from './rejection-counters.ts';
import { assertRoundContext, type RoundContext } from './round-context.ts';
import { encodedLaneCount, updateLayout } from './update-layout.ts';
import { blockLeaf, contributorsDigest, updateSignatureDomain, updateStatement } from './update-statement.ts';
import { assembleUpdate, type VerifiedUpdate } from './verified-update.ts';
import { FRAME_KIND, unframe } from './wire-frame.ts';

/** A block that passed every check; `digest` is the Merkle root its signature covers. */
export interface VerifiedBlock extends ParameterBlock {
  readonly digest: Uint8Array;
}

/** A manifest that passed every check. */
export interface VerifiedManifest extends UpdateManifest {}

/** Looks up the registered signing key of a signer (site or aggregator), or undefined if unknown. */
export type KeyLookup = (signer: string) => PublicSigningKey | undefined;

/** What a receiver expects of the blocks it accepts. */
export interface BlockVerifierOptions {
  readonly context: RoundContext;
  /** SHA-256 id of the federation's CKKS parameters. */
  readonly ckksParamsId: Uint8Array;
  /** The round's encoding; when given, a block with any other encoding is ENCODING_MISMATCH. */
  readonly encoding?: Encoding;
  readonly keys: KeyLookup;
  /** Signature algorithms the federation accepts. */
  readonly allowedAlgorithms: readonly SignatureAlgorithm[];
  /** Shared counters; a fresh set when omitted. */
  readonly counters?: RejectionCounters;
  /** Verified signatures remembered (LRU); default 4096. */
  readonly signatureCacheSize?: number;
  /**
   * What is verified: a site's own update (`'site-update'`: one contributor, no list, signed under
   * `UPDATE_SIGNATURE_DOMAIN`) or an aggregator's partial (`'partial'`: a contributor list, signed
   * under `PARTIAL_SIGNATURE_DOMAIN`). Either is accepted when omitted (tools, tests).
   */
  readonly kind?: 'site-update' | 'partial';
  /**
   * Longest serialized ciphertext accepted (`CkksContext.maxCiphertextBytes`); a block above it
   * is `OVERSIZE` before its protobuf is decoded. Default: N = 16384's bound.
   */
  readonly maxCiphertextBytes?: number;
  /** What the round's RoundOpen pinned; a header that differs is `NOT_PINNED` before any signature work. */
  readonly pinned?: PinnedUpdate;
  /**
   * Called after each lattice verification actually run (not for one answered from the cache),
   * with its duration in milliseconds and whether it verified; for metrics. Errors it throws are
   * ignored.
   */
  readonly onSignatureVerified?: (ms: number, ok: boolean) => void;
}

/** The update size and example weights a RoundOpen pins. */
export interface PinnedUpdate {
  /** Parameters of every update of the round (the model's size). */
  readonly totalParams: number;
  /**
   * The example weight a signer must declare: a site's pinned examples, or for a partial the sum
   * of its listed sites' pinned examples (checked by the caller, who knows the list). Undefined:
   * the signer has no pinned weight this round (refused as `NOT_PINNED`).
   */
  readonly weightOf?: (signer: string) => number | undefined;
}

/** Bytes of a framed block beyond its ciphertext: header fields, CRC list and Merkle path. */
const BLOCK_OVERHEAD_BYTES = 16 * 1024;
/** Bytes of a framed manifest besides its contributor list. */
const MANIFEST_BASE_BYTES = 8 * 1024;
/** Bytes of one entry of a contributor list (site id ≤ 128, digest 32, weight 8, tags). */
const CONTRIBUTOR_ENTRY_BYTES = 192;
/** `maxCiphertextBytes` of N = 16384, the largest ring Cohort allows. */
const DEFAULT_MAX_CIPHERTEXT_BYTES = 2 * 16384 * 8 + 1024;
/** Bytes of one forwarded site manifest inside a partial's manifest (ML-DSA-65 signs with 3,309). */
const SITE_MANIFEST_BYTES = MANIFEST_BASE_BYTES;

/** Longest framed ParameterBlock carrying one ciphertext of at most `maxCiphertextBytes`. */
export function maxBlockFrameBytes(maxCiphertextBytes: number): number {
  return maxCiphertextBytes + BLOCK_OVERHEAD_BYTES;
}

/**
 * Longest framed UpdateManifest: a site's own (`contributors` 0) or a partial's listing and
 * forwarding the manifests of up to `contributors` sites.
 */
export function maxManifestFrameBytes(contributors: number): number {
  return MANIFEST_BASE_BYTES + contributors * (CONTRIBUTOR_ENTRY_BYTES + SITE_MANIFEST_BYTES);
}

const MAX_PATH = 32;

/**
 * Checks ParameterBlocks and UpdateManifests, in cheap-to-expensive order: frame, protobuf,
 * header sanity, context (federation, round, base commit), CKKS parameters, encoding, CRC32s,
 * signer key, Merkle path, lattice signature. Each refusal throws `BlockRejectedError` with a
 * stable reason and increments {@link counters}.
 *
 * The update signature is verified once per (statement, signature) and remembered, so the
 * remaining blocks of an update cost a Merkle path check, not a lattice verification.
 */
export class BlockVerifier {
  readonly counters: RejectionCounters;
  readonly #opts: BlockVerifierOptions;
  readonly #allowedIds: Set<number>;
  readonly #verified = new Map<string, true>();
  readonly #cacheSize: number;

  constructor(options: BlockVerifierOptions) {
    assertRoundContext(options.context);
    if (options.ckksParamsId.length !== 32) {
      throw new InvalidArgumentError(`ckksParamsId length ${options.ckksParamsId.length}, expects 32`);
    }
    this.#opts = options;
    this.counters = options.counters ?? new RejectionCounters();
    this.#allowedIds = new Set(options.allowedAlgorithms.map((a) => SIGNATURE_ALGORITHM_IDS[a]));
    this.#cacheSize = options.signatureCacheSize ?? 4096;
  }

  /** Longest framed block accepted: one ciphertext plus header, CRC list and Merkle path. */
  get maxBlockBytes(): number {
    return maxBlockFrameBytes(this.#opts.maxCiphertextBytes ?? DEFAULT_MAX_CIPHERTEXT_BYTES);
  }

  /** Longest framed manifest accepted: fixed fields plus a contributor list as long as lanes allow. */
  get maxManifestBytes(): number {
    const list = this.#opts.kind === 'site-update' ? 0 : (this.#opts.encoding?.maxContributors ?? 1024);
    return maxManifestFrameBytes(list);
  }

  /** Verifies one framed block; returns it typed, or throws `BlockRejectedError`. */
  verifyBlock(bytes: Uint8Array): VerifiedBlock {
    return this.#counted(() => {
      this.#checkSize(bytes, this.maxBlockBytes, 'block');
      const block = decodeBlockBody(unframe(bytes, FRAME_KIND.block));
      this.#checkHeader(block, 'block');
      const maxCt = this.#opts.maxCiphertextBytes ?? DEFAULT_MAX_CIPHERTEXT_BYTES;
      if (block.ciphertext.length > maxCt) {
        throw new BlockRejectedError(
          'OVERSIZE',
          `block ${block.blockIndex} carries a ${block.ciphertext.length}-byte ciphertext, at most ${maxCt}`,
        );
      }
      if (block.blockIndex >= block.blockCount) {
        throw new BlockRejectedError(
          'BLOCK_COUNT_MISMATCH',
          `block index ${block.blockIndex} is not below block count ${block.blockCount}`,
        );
      }
      const per = block.encoding.paramsPerBlock;
      const lanes = encodedLaneCount(block.totalParams, block.encoding);
      const expectedCount = Math.min(per, lanes - block.blockIndex * per);
      if (block.paramOffset !== block.blockIndex * per || block.paramCount !== expectedCount) {
        throw new BlockRejectedError(
          'BAD_HEADER',
          `block ${block.blockIndex} covers [${block.paramOffset}, +${block.paramCount}), geometry says [${block.blockIndex * per}, +${expectedCount})`,
        );
      }
      if (block.ciphertext.length === 0)
        throw new BlockRejectedError('BAD_HEADER', 'block has no ciphertext');
      const bad = verifyChunkCrc32s(block.ciphertext, block.crcChunkBytes, block.crc32);
      if (bad !== -1) {
        throw new BlockRejectedError('CRC_MISMATCH', `ciphertext chunk ${bad} fails its CRC32`, {
          details: { chunk: bad, signer: block.signer, blockIndex: block.blockIndex },
        });
      }
      const key = this.#signerKey(block);
      if (block.merklePath.length > MAX_PATH) {
        throw new BlockRejectedError('BAD_HEADER', `Merkle path of ${block.merklePath.length} hashes`);
      }
      const leaf = blockLeaf(block, block.ciphertext);
      const digest = merkleRootFromProof(leaf, block.blockIndex, block.blockCount, block.merklePath);
      if (!digest) {
        throw new BlockRejectedError(
          'BAD_SIGNATURE',
          `block ${block.blockIndex} has a malformed Merkle path`,
        );
      }
      this.#checkSignature(block, digest, block.latticeSignature, key);
      return { ...block, digest };
    });
  }

  /** Verifies one framed manifest; returns it typed, or throws `BlockRejectedError`. */
  verifyManifest(bytes: Uint8Array): VerifiedManifest {
    return this.#counted(() => {
      this.#checkSize(bytes, this.maxManifestBytes, 'manifest');
      const manifest = decodeManifestBody(unframe(bytes, FRAME_KIND.manifest));
      this.#checkHeader(manifest, 'manifest');
      if (manifest.updateDigest.length !== 32) {
        throw new BlockRejectedError('BAD_HEADER', `update digest of ${manifest.updateDigest.length} bytes`);
      }
      this.#checkContributorList(manifest);
      const key = this.#signerKey(manifest);
      this.#checkSignature(manifest, manifest.updateDigest, manifest.signature, key);
      return manifest;
    });
  }

  /**
   * Verifies an update received whole — its framed blocks and manifest, as `encodeUpdate` or
   * `encodeAggregate` return them — and assembles it (`assembleUpdate`'s checks).
   */
  verifyUpdate(update: {
    readonly blocks: readonly Uint8Array[];
    readonly manifest: Uint8Array;
  }): VerifiedUpdate {
    const manifest = this.verifyManifest(update.manifest);
    return assembleUpdate(
      manifest,
      update.blocks.map((b) => this.verifyBlock(b)),
    );
  }

  /** Runs `fn`, counting a `BlockRejectedError` before rethrowing it. */
  #counted<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof BlockRejectedError) this.counters.increment(err.reason);
      throw err;
    }
  }

  #checkSize(bytes: Uint8Array, max: number, what: string): void {
    if (bytes instanceof Uint8Array && bytes.length > max) {
      throw new BlockRejectedError('OVERSIZE', `${what} of ${bytes.length} bytes, at most ${max}`);
    }
  }

  #checkHeader(h: UpdateHeader, what: string): void {
    const ctx = this.#opts.context;
    if (h.federation !== ctx.federation) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${what} is for federation ${JSON.stringify(h.federation)}, this is ${JSON.stringify(ctx.federation)}`,
      );
    }
    if (h.round !== ctx.round) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${what} is for round ${h.round}, this is round ${ctx.round}`,
        { details: { round: h.round } },
      );
    }
    if (h.version !== ctx.version || !equalBytes(h.baseCommit, ctx.baseCommit)) {
      throw new BlockRejectedError(
        'WRONG_CONTEXT',
        `${what} is on another base commit (version ${h.version})`,
      );
    }
    if (!equalBytes(h.encoding.ckksParamsId, this.#opts.ckksParamsId)) {
      throw new BlockRejectedError(
        'CKKS_PARAMS_MISMATCH',
        `${what} was encrypted under other CKKS parameters`,
      );
    }
    const e = h.encoding;
    if (
      ![1, 2, 4, 8].includes(e.bits) ||
      !(e.clip > 0) ||
      !Number.isFinite(e.clip) ||
      e.lanesPerSlot < 1 ||
      e.laneBits < 1 ||
      e.paramsPerBlock !== e.slots * e.lanesPerSlot ||
      e.maxContributors < 1
    ) {
      throw new BlockRejectedError('BAD_HEADER', `${what} has an impossible encoding`);
    }
    if (this.#opts.encoding && !sameEncoding(e, this.#opts.encoding)) {
      throw new BlockRejectedError('ENCODING_MISMATCH', `${what} encoding differs from the round's`);
    }
    if (h.blockCount < 1 || h.totalParams < 1 || updateLayout(h.totalParams, e).blocks !== h.blockCount) {
      throw new BlockRejectedError(
        'BLOCK_COUNT_MISMATCH',
        `${what} declares ${h.blockCount} blocks for ${h.totalParams} parameters (and the aggregate MAC's ${updateLayout(h.totalParams, e).macSlots} slots) at ${e.paramsPerBlock} per block`,
      );
    }
    if (!Number.isFinite(h.exampleWeight) || h.exampleWeight < 0) {
      throw new BlockRejectedError('BAD_HEADER', `${what} example weight ${h.exampleWeight}`);
    }
    const partial = h.contributorsDigest.length > 0;
    const kind = this.#opts.kind;
    if ((kind === 'site-update' && partial) || (kind === 'partial' && !partial)) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `${what} of ${JSON.stringify(h.signer)} is ${partial ? 'a partial aggregate' : "a site's update"}, expected ${kind === 'partial' ? 'a partial aggregate' : "a site's update"}`,
      );
    }
    const pinned = this.#opts.pinned;
    if (pinned !== undefined) {
      if (h.totalParams !== pinned.totalParams) {
        throw new BlockRejectedError(
          'NOT_PINNED',
          `${what} of ${JSON.stringify(h.signer)} has ${h.totalParams} parameters, the round pinned ${pinned.totalParams}`,
        );
      }
      if (!partial && pinned.weightOf !== undefined) {
        const weight = pinned.weightOf(h.signer);
        if (weight === undefined || h.exampleWeight !== weight) {
          throw new BlockRejectedError(
            'NOT_PINNED',
            `${what} of ${JSON.stringify(h.signer)} declares weight ${h.exampleWeight}, the round pinned ${weight ?? 'none'}`,
          );
        }
      }
    }
    if (h.contributors < 1 || h.contributors > e.maxContributors) {
      throw new BlockRejectedError('BAD_HEADER', `${what} claims ${h.contributors} contributors`);
    }
    if (h.crcChunkBytes < 1024 || h.crcChunkBytes > 1_048_576) {
      throw new BlockRejectedError('BAD_HEADER', `${what} CRC chunk of ${h.crcChunkBytes} bytes`);
    }
    if (!this.#allowedIds.has(h.signatureAlgorithm)) {
      throw new BlockRejectedError(
        'ALGORITHM_NOT_ALLOWED',
        `${what} signed with algorithm id ${h.signatureAlgorithm}, not allowed in this federation`,
      );
    }
  }

  /** A site update lists nobody; a partial aggregate lists exactly its contributors, matching the signed digest. */
  #checkContributorList(m: UpdateManifest): void {
    const list = m.contributorList;
    if (list.length === 0 && m.contributorsDigest.length === 0) {
      if (m.contributors !== 1) {
        throw new BlockRejectedError(
          'BAD_HEADER',
          `manifest claims ${m.contributors} contributors but lists none`,
        );
      }
      return;
    }
    if (list.length !== m.contributors) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `manifest lists ${list.length} contributors, header says ${m.contributors}`,
      );
    }
    const sites = new Set(list.map((c) => c.site));
    if (sites.size !== list.length) {
      throw new BlockRejectedError(
        'DUPLICATE',
        `a site appears twice in the contributor list of ${JSON.stringify(m.signer)}`,
      );
    }
    let weight = 0;
    for (const c of list) {
      if (!Number.isFinite(c.weight) || c.weight < 0 || c.digest.length !== 32) {
        throw new BlockRejectedError(
          'BAD_HEADER',
          `contributor ${JSON.stringify(c.site)} has a bad weight or digest`,
        );
      }
      weight += c.weight;
    }
    if (Math.abs(weight - m.exampleWeight) > 1e-9 * Math.max(1, weight)) {
      throw new BlockRejectedError(
        'BAD_HEADER',
        `contributor weights sum to ${weight}, header says ${m.exampleWeight}`,
      );
    }
    if (!equalBytes(contributorsDigest(list), m.contributorsDigest)) {
      throw new BlockRejectedError('DIGEST_MISMATCH', 'contributor list does not match its signed digest');
    }
  }

  #signerKey(h: UpdateHeader): PublicSigningKey {
    const key = this.#opts.keys(h.signer);
    if (!key) {
      throw new BlockRejectedError('WRONG_SIGNER', `signer ${JSON.stringify(h.signer)} is not registered`);
    }
    if (key.keyId !== h.signerKeyId || SIGNATURE_ALGORITHM_IDS[key.algorithm] !== h.signatureAlgorithm) {
      throw new BlockRejectedError(
        'WRONG_SIGNER',
        `signed with key ${h.signerKeyId}, signer ${JSON.stringify(h.signer)} is registered with ${key.keyId}`,
      );
    }
    return key;
  }

  #checkSignature(h: UpdateHeader, digest: Uint8Array, signature: Uint8Array, key: PublicSigningKey): void {
    const statement = updateStatement(h, digest);
    const cacheKey = createHash('sha256')
      .update(statement)
      .update(signature)
      .update(key.publicKey)
      .digest('hex');
    if (this.#verified.has(cacheKey)) {
      // Refresh its place in the LRU order.
      this.#verified.delete(cacheKey);
      this.#verified.set(cacheKey, true);
      return;
    }
    const started = performance.now();
    const ok = verify(key, updateSignatureDomain(h), statement, signature);
    try {
      this.#opts.onSignatureVerified?.(performance.now() - started, ok);
    } catch {
      // an observer must not change what is verified
    }
    if (!ok) {
      throw new BlockRejectedError(
        'BAD_SIGNATURE',
        `signature of ${JSON.stringify(h.signer)} does not verify`,
      );
    }
    this.#verified.set(cacheKey, true);
    if (this.#verified.size > this.#cacheSize) {
      this.#verified.delete(this.#verified.keys().next().value!);
    }
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
