import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { CkksKeyset, getCkksContext } from '../../crypto/ckks/index.ts';
import { chunkCrc32s, merkleProof, merkleRoot } from '../../crypto/digest/index.ts';
import { generateSigningKeyPair, sign } from '../../crypto/signature/index.ts';
import { BlockRejectedError, type BlockRejectReason, UpdateError } from '../../src/errors/index.ts';
import {
  type Aggregate,
  assembleUpdate,
  BlockVerifier,
  blockLeaf,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  decodeBlockBody,
  type EncodedUpdate,
  encodeAggregate,
  encodeBlockBody,
  encodeUpdate,
  FRAME_KIND,
  frame,
  type ParameterBlock,
  sumUpdates,
  UPDATE_SIGNATURE_DOMAIN,
  unframe,
  updateStatement,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate, roundContext } from '../helpers/codec-fixture.ts';

function rejection(fn: () => unknown): BlockRejectReason {
  try {
    fn();
  } catch (err) {
    if (err instanceof BlockRejectedError) return err.reason;
    throw err;
  }
  throw new Error('expected a BlockRejectedError, nothing was thrown');
}

/** Re-frames a block after `mutate`, re-signing it with `signer`'s key when given (a malicious but enrolled site). */
function forge(
  fx: CodecFixture,
  bytes: Uint8Array,
  mutate: (b: ParameterBlock) => void,
  resignAs?: string,
): Uint8Array {
  const block = decodeBlockBody(unframe(bytes, FRAME_KIND.block));
  mutate(block);
  if (resignAs) {
    block.crc32 = chunkCrc32s(block.ciphertext, block.crcChunkBytes);
    const leaves = [blockLeaf(block, block.ciphertext)];
    if (block.blockCount !== 1) throw new Error('forge re-signs single-block updates only');
    block.merklePath = merkleProof(leaves, 0);
    block.latticeSignature = sign(
      fx.signers.get(resignAs)!,
      UPDATE_SIGNATURE_DOMAIN,
      updateStatement(block, merkleRoot(leaves)),
    );
  }
  return frame(FRAME_KIND.block, encodeBlockBody(block));
}

describe('BlockVerifier rejects each bad input with its own reason', () => {
  let fx: CodecFixture;
  let small: EncodedUpdate; // one block
  let multi: EncodedUpdate; // several blocks
  beforeAll(async () => {
    fx = await codecFixture(3);
    const enc = (n: number, site: number) =>
      encodeUpdate({
        update: randomUpdate(n, 5 + site, 0.04),
        residual: null,
        credentials: fx.sites[site]!,
        context: fx.context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: 10,
      });
    small = enc(1000, 0);
    multi = enc(40_000, 1);
  });

  it('accepts untouched blocks and manifests', () => {
    const v = fx.verifier();
    for (const b of multi.blocks) expect(v.verifyBlock(b).signer).toBe('site-1');
    expect(v.verifyManifest(multi.manifest).blockCount).toBe(multi.blocks.length);
    expect(v.counters.snapshot()).toEqual({});
  });

  it('payload bit flip → CRC_MISMATCH', () => {
    const bad = small.blocks[0]!.slice();
    bad[12 + 8 + 1000]! ^= 0x10; // inside the ciphertext: the body's first field, after frame, tag and length
    const v = fx.verifier();
    expect(rejection(() => v.verifyBlock(bad))).toBe('CRC_MISMATCH');
    expect(v.counters.get('CRC_MISMATCH')).toBe(1);
  });

  it('signature bit flip → BAD_SIGNATURE', () => {
    const bad = forge(fx, small.blocks[0]!, (b) => {
      b.latticeSignature = b.latticeSignature.slice();
      b.latticeSignature[20]! ^= 0x01;
    });
    expect(rejection(() => fx.verifier().verifyBlock(bad))).toBe('BAD_SIGNATURE');
  });

  it('wrong signer key → WRONG_SIGNER; unknown signer → WRONG_SIGNER', () => {
    const other = generateSigningKeyPair('falcon-512');
    const v = new BlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => (s === 'site-0' ? other : undefined),
      allowedAlgorithms: ['falcon-512'],
    });
    expect(rejection(() => v.verifyBlock(small.blocks[0]!))).toBe('WRONG_SIGNER');
    expect(rejection(() => v.verifyBlock(multi.blocks[0]!))).toBe('WRONG_SIGNER');
  });

  it('a site signing as another site (claimed key id) → BAD_SIGNATURE', () => {
    const bad = forge(fx, small.blocks[0]!, (b) => b, 'site-2'); // header still says site-0
    expect(rejection(() => fx.verifier().verifyBlock(bad))).toBe('BAD_SIGNATURE');
  });

  it('replay into another round or federation → WRONG_CONTEXT; a rewritten round → BAD_SIGNATURE', () => {
    expect(rejection(() => fx.verifier({ context: roundContext(8) }).verifyBlock(small.blocks[0]!))).toBe(
      'WRONG_CONTEXT',
    );
    expect(
      rejection(() => fx.verifier({ context: roundContext(7, 'other-fed') }).verifyBlock(small.blocks[0]!)),
    ).toBe('WRONG_CONTEXT');
    const otherBase = { ...fx.context, baseCommit: new Uint8Array(32) };
    expect(rejection(() => fx.verifier({ context: otherBase }).verifyManifest(small.manifest))).toBe(
      'WRONG_CONTEXT',
    );
    const rewritten = forge(fx, small.blocks[0]!, (b) => {
      b.round = 8;
    });
    expect(rejection(() => fx.verifier({ context: roundContext(8) }).verifyBlock(rewritten))).toBe(
      'BAD_SIGNATURE',
    );
  });

  it('truncated bytes → TRUNCATED; random bytes → MALFORMED', () => {
    const b = small.blocks[0]!;
    for (const n of [0, 3, 11, 12, 500, b.length - 1]) {
      expect(rejection(() => fx.verifier().verifyBlock(b.subarray(0, n)))).toBe('TRUNCATED');
    }
    const random = new Uint8Array(4096);
    for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
    expect(rejection(() => fx.verifier().verifyBlock(random))).toBe('MALFORMED');
    expect(rejection(() => fx.verifier().verifyBlock(multi.manifest))).toBe('MALFORMED'); // a manifest is not a block
  });

  it('ciphertext under other CKKS parameters → CKKS_PARAMS_MISMATCH (header, and a lying header at sum time)', async () => {
    const otherCtx = await getCkksContext({
      polyModulusDegree: 4096,
      coeffModulus: [40, 20, 40],
      scaleBits: 16,
      exactBits: 20,
    });
    const otherKeys = CkksKeyset.create(otherCtx);
    try {
      const foreign = encodeUpdate({
        update: randomUpdate(100, 9, 0.01),
        residual: null,
        credentials: { ...fx.sites[0]!, ckks: otherKeys },
        context: fx.context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: 1,
      });
      expect(rejection(() => fx.verifier().verifyBlock(foreign.blocks[0]!))).toBe('CKKS_PARAMS_MISMATCH');
      // An enrolled site lies: our parameter id in the header, a foreign ciphertext inside.
      const foreignCt = otherKeys.encrypt(new Float64Array(otherCtx.slots));
      const lying = forge(
        fx,
        small.blocks[0]!,
        (b) => {
          b.ciphertext = foreignCt;
        },
        'site-0',
      );
      const v = fx.verifier();
      const block = v.verifyBlock(lying);
      const manifest = v.verifyManifest(
        frame(
          FRAME_KIND.manifest,
          (await import('../../src/protocol/index.ts')).encodeManifestBody({
            ...block,
            updateDigest: block.digest,
            signature: block.latticeSignature,
            contributorList: [],
            siteManifests: [],
          }),
        ),
      );
      const update = assembleUpdate(manifest, [block]);
      expect(rejection(() => sumUpdates(fx.ctx, [update]))).toBe('CKKS_PARAMS_MISMATCH');
    } finally {
      otherKeys.delete();
    }
  });

  it('block count mismatch: a missing block, an index beyond the count, a foreign block', () => {
    const v = fx.verifier();
    const manifest = v.verifyManifest(multi.manifest);
    const blocks = multi.blocks.map((b) => v.verifyBlock(b));
    expect(rejection(() => assembleUpdate(manifest, blocks.slice(1)))).toBe('BLOCK_COUNT_MISMATCH');
    expect(rejection(() => assembleUpdate(manifest, [...blocks, blocks[0]!]))).toBe('DUPLICATE');
    const beyond = forge(fx, small.blocks[0]!, (b) => {
      b.blockIndex = 5;
    });
    expect(rejection(() => v.verifyBlock(beyond))).toBe('BLOCK_COUNT_MISMATCH');
    const smallBlock = v.verifyBlock(small.blocks[0]!);
    expect(rejection(() => assembleUpdate(manifest, [smallBlock, ...blocks.slice(1)]))).toBe(
      'DIGEST_MISMATCH',
    );
  });

  it('NaN or Infinity in an update → UPDATE_NON_FINITE naming the index', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      const update = randomUpdate(3000, 1, 0.01);
      update[1234] = bad;
      let caught: unknown;
      try {
        encodeUpdate({
          update,
          residual: null,
          credentials: fx.sites[0]!,
          context: fx.context,
          options: DEFAULT_CODEC_OPTIONS,
          exampleWeight: 1,
        });
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(UpdateError);
      expect((caught as UpdateError).code).toBe('UPDATE_NON_FINITE');
      expect((caught as Error).message).toContain('[1234]');
    }
  });

  it('lane overflow: more contributors than the headroom, and an understated contributor count', () => {
    const options = { ...DEFAULT_CODEC_OPTIONS, bits: 8 as const, maxContributors: 2 };
    const updates = fx.sites.map((credentials, s) => {
      const e = encodeUpdate({
        update: randomUpdate(5000, 40 + s, 0.05),
        residual: null,
        credentials,
        context: fx.context,
        options,
        exampleWeight: 1,
      });
      const v = fx.verifier();
      return v.verifyUpdate(e);
    });
    expect(rejection(() => sumUpdates(fx.ctx, updates))).toBe('LANE_OVERFLOW');
    const two = sumUpdates(fx.ctx, updates.slice(0, 2));
    // An understated list: the MAC holds for the two sites summed, not for one.
    const understated: Aggregate = { ...two, contributors: 1, sites: two.sites.slice(0, 1) };
    expect(rejection(() => decodeAggregate(fx.keyset, understated, fx.mac()))).toBe('MAC_MISMATCH');
    const overstated: Aggregate = { ...two, contributors: 3 };
    expect(rejection(() => decodeAggregate(fx.keyset, overstated, fx.mac()))).toBe('LANE_OVERFLOW');
    expect(decodeAggregate(fx.keyset, two, fx.mac()).contributors).toBe(2);
  });

  it('a block over the size any ciphertext allows → OVERSIZE before its protobuf is decoded', () => {
    // A 16 MiB repeated CRC field: decoding it would cost hundreds of MiB of heap.
    const padded = forge(fx, small.blocks[0]!, (b) => {
      b.crc32 = new Array(4 * 1024 * 1024).fill(0xffffffff);
    });
    const v = new BlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
      maxCiphertextBytes: fx.ctx.maxCiphertextBytes,
    });
    const heap = process.memoryUsage().heapUsed;
    expect(rejection(() => v.verifyBlock(padded))).toBe('OVERSIZE');
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(64 * 1024 * 1024);
    // A ciphertext longer than any at the last level, in a block of acceptable size.
    const fat = forge(fx, small.blocks[0]!, (b) => {
      b.ciphertext = new Uint8Array(fx.ctx.maxCiphertextBytes + 1);
    });
    expect(rejection(() => v.verifyBlock(fat))).toBe('OVERSIZE');
    expect(v.counters.get('OVERSIZE')).toBe(2);
  });

  it('the size and weight RoundOpen pinned → NOT_PINNED before any signature work', () => {
    const pinned = (totalParams: number, weight: number | undefined) =>
      new BlockVerifier({
        context: fx.context,
        ckksParamsId: fx.ctx.paramsId,
        keys: (s) => fx.signers.get(s),
        allowedAlgorithms: ['falcon-512'],
        kind: 'site-update',
        pinned: { totalParams, weightOf: () => weight },
      });
    expect(pinned(1000, 10).verifyBlock(small.blocks[0]!).signer).toBe('site-0');
    expect(rejection(() => pinned(1001, 10).verifyBlock(small.blocks[0]!))).toBe('NOT_PINNED');
    expect(rejection(() => pinned(1000, 11).verifyManifest(small.manifest))).toBe('NOT_PINNED');
    expect(rejection(() => pinned(1000, undefined).verifyBlock(small.blocks[0]!))).toBe('NOT_PINNED');
  });

  it("a partial aggregate's signature is not a site update's, nor the reverse", () => {
    const partial = encodeAggregate(
      sumUpdates(fx.ctx, [
        assembleUpdate(fx.verifier().verifyManifest(small.manifest), [
          fx.verifier().verifyBlock(small.blocks[0]!),
        ]),
      ]),
      { signer: 'site-2', signing: fx.signers.get('site-2')! },
      fx.context,
      { crcChunkBytes: DEFAULT_CODEC_OPTIONS.crcChunkBytes },
    );
    const asPartial = new BlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
      kind: 'partial',
    });
    expect(asPartial.verifyManifest(partial.manifest).contributors).toBe(1);
    expect(rejection(() => asPartial.verifyBlock(small.blocks[0]!))).toBe('BAD_HEADER');
    const asSite = new BlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: (s) => fx.signers.get(s),
      allowedAlgorithms: ['falcon-512'],
      kind: 'site-update',
    });
    expect(rejection(() => asSite.verifyBlock(partial.blocks[0]!))).toBe('BAD_HEADER');
    // Signed under the site-update domain while claiming to be a partial: the signature fails.
    const crossed = decodeBlockBody(unframe(partial.blocks[0]!, FRAME_KIND.block));
    crossed.latticeSignature = sign(
      fx.signers.get('site-2')!,
      UPDATE_SIGNATURE_DOMAIN,
      updateStatement(crossed, merkleRoot([blockLeaf(crossed, crossed.ciphertext)])),
    );
    expect(rejection(() => asPartial.verifyBlock(frame(FRAME_KIND.block, encodeBlockBody(crossed))))).toBe(
      'BAD_SIGNATURE',
    );
  });

  it('fuzz: random bytes and mutated blocks only ever yield typed rejections', () => {
    const v = fx.verifier();
    const base = small.blocks[0]!;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        expect(() => v.verifyBlock(bytes)).toThrow(BlockRejectedError);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: base.length - 1 }), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.nat({ max: base.length }),
        (flips, cut) => {
          const bytes = base.slice(0, Math.max(cut, 1));
          for (const [i, x] of flips) if (i < bytes.length) bytes[i]! ^= x;
          try {
            v.verifyBlock(bytes);
          } catch (err) {
            expect(err).toBeInstanceOf(BlockRejectedError);
            return;
          }
          // Only a mutation that left the block byte-identical may pass.
          expect(Buffer.compare(Buffer.from(bytes), Buffer.from(base))).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
