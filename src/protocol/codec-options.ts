import type { LaneContext } from '../../crypto/lanes/index.ts';
import { laneLayout } from '../../crypto/lanes/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';
import type { Encoding } from './messages.ts';

/** Quantization bit widths the codec supports. */
export type CodecBits = 1 | 2 | 4 | 8;

/** Per-round codec settings, fixed by the coordinator's RoundOpen and equal for all sites. */
export interface CodecOptions {
  /** Quantization bits b ∈ {1, 2, 4, 8}. */
  readonly bits: CodecBits;
  /** Clipping range: updates are clipped to [−clip, clip] before quantization (finite, > 0). */
  readonly clip: number;
  /** Most sites whose updates may be summed: sizes the lane headroom. */
  readonly maxContributors: number;
  /** Bytes of ciphertext per CRC32 (1 KiB to 1 MiB). */
  readonly crcChunkBytes: number;
  /** Number of parameter shards; block i belongs to shard i mod shardCount. Default 1. */
  readonly shardCount?: number;
}

/** Defaults: 8-bit, clip 0.05, 32 contributors of headroom, 16 KiB CRC chunks, one shard. */
export const DEFAULT_CODEC_OPTIONS: CodecOptions = Object.freeze({
  bits: 8,
  clip: 0.05,
  maxContributors: 32,
  crcChunkBytes: 16_384,
  shardCount: 1,
});

/**
 * The wire encoding for `options` under a CKKS context. Block geometry: one block is exactly one
 * ciphertext, so a full block holds slots × lanesPerSlot parameters (e.g. 4096 × 3 = 12,288 at
 * 8 bits with 32 contributors of headroom), not the seed's 128×128: a 16,384-parameter block
 * would need 1⅓ ciphertexts and waste most of the second.
 */
export function codecEncoding(ctx: LaneContext, options: CodecOptions): Encoding {
  assertCodecOptions(options);
  const layout = laneLayout(options.bits, options.maxContributors, ctx.params.exactBits);
  return {
    bits: options.bits,
    clip: Math.fround(options.clip),
    laneBits: layout.laneBits,
    lanesPerSlot: layout.lanesPerSlot,
    maxContributors: options.maxContributors,
    scaleBits: ctx.params.scaleBits,
    slots: ctx.slots,
    paramsPerBlock: ctx.slots * layout.lanesPerSlot,
    ckksParamsId: ctx.paramsId,
  };
}

/** Throws `INVALID_ARGUMENT` naming the bad codec option. */
export function assertCodecOptions(o: CodecOptions): void {
  if (![1, 2, 4, 8].includes(o.bits)) {
    throw new InvalidArgumentError(`codec.bits ${o.bits} must be 1, 2, 4 or 8`);
  }
  if (!Number.isFinite(o.clip) || o.clip <= 0 || !(Math.fround(o.clip) > 0)) {
    throw new InvalidArgumentError(`codec.clip ${o.clip} must be a finite float32 > 0`);
  }
  if (!Number.isInteger(o.maxContributors) || o.maxContributors < 1 || o.maxContributors > 65_535) {
    throw new InvalidArgumentError(
      `codec.maxContributors ${o.maxContributors} must be an integer in [1, 65535]`,
    );
  }
  if (!Number.isInteger(o.crcChunkBytes) || o.crcChunkBytes < 1024 || o.crcChunkBytes > 1_048_576) {
    throw new InvalidArgumentError(
      `codec.crcChunkBytes ${o.crcChunkBytes} must be an integer in [1024, 1048576]`,
    );
  }
  const shards = o.shardCount ?? 1;
  if (!Number.isInteger(shards) || shards < 1 || shards > 65_535) {
    throw new InvalidArgumentError(`codec.shardCount ${shards} must be an integer in [1, 65535]`);
  }
}

/** True when two encodings are identical field by field (blocks with different ones cannot be summed). */
export function sameEncoding(a: Encoding, b: Encoding): boolean {
  return (
    a.bits === b.bits &&
    a.clip === b.clip &&
    a.laneBits === b.laneBits &&
    a.lanesPerSlot === b.lanesPerSlot &&
    a.maxContributors === b.maxContributors &&
    a.scaleBits === b.scaleBits &&
    a.slots === b.slots &&
    a.paramsPerBlock === b.paramsPerBlock &&
    a.ckksParamsId.length === b.ckksParamsId.length &&
    a.ckksParamsId.every((x, i) => x === b.ckksParamsId[i])
  );
}
