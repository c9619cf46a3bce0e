import { beforeAll, describe, expect, it } from 'vitest';
import { BlockRejectedError } from '../../src/errors/index.ts';
import {
  DEFAULT_CODEC_OPTIONS,
  type EncodedUpdate,
  encodeUpdate,
  UpdateInbox,
  type VerifiedBlock,
  type VerifiedManifest,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';

describe('UpdateInbox', () => {
  let fx: CodecFixture;
  let a: { blocks: VerifiedBlock[]; manifest: VerifiedManifest; encoded: EncodedUpdate };
  let b: { blocks: VerifiedBlock[]; manifest: VerifiedManifest };
  beforeAll(async () => {
    fx = await codecFixture(1);
    const v = fx.verifier();
    const enc = (seed: number) =>
      encodeUpdate({
        update: randomUpdate(30_000, seed, 0.03),
        residual: null,
        credentials: fx.sites[0]!,
        context: fx.context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: 5,
      });
    const ea = enc(1);
    const eb = enc(2);
    a = {
      blocks: ea.blocks.map((x) => v.verifyBlock(x)),
      manifest: v.verifyManifest(ea.manifest),
      encoded: ea,
    };
    b = { blocks: eb.blocks.map((x) => v.verifyBlock(x)), manifest: v.verifyManifest(eb.manifest) };
  });

  it('assembles blocks and manifest arriving in any order, and reports repeats', () => {
    const inbox = new UpdateInbox();
    expect(inbox.addManifest(a.manifest)).toBe('stored');
    for (const block of [...a.blocks].reverse()) {
      expect(inbox.whole).toBe(false);
      expect(inbox.addBlock(block)).toBe('stored');
    }
    expect(inbox.addBlock(a.blocks[0]!)).toBe('repeat');
    expect(inbox.addManifest(a.manifest)).toBe('repeat');
    expect(inbox.whole).toBe(true);
    const update = inbox.assemble();
    expect(Buffer.from(update.digest).equals(Buffer.from(a.encoded.digest))).toBe(true);
    expect(update.ciphertexts).toHaveLength(a.blocks.length);
  });

  it('refuses pieces of another update (DIGEST_MISMATCH) and assembling too early', () => {
    const inbox = new UpdateInbox();
    inbox.addBlock(a.blocks[0]!);
    expect(() => inbox.addBlock(b.blocks[1]!)).toThrow(BlockRejectedError);
    expect(() => inbox.addManifest(b.manifest)).toThrow(/closes another update/);
    expect(() => inbox.assemble()).toThrow(/no manifest/);
    inbox.addManifest(a.manifest);
    expect(() => inbox.assemble()).toThrow(expect.objectContaining({ reason: 'BLOCK_COUNT_MISMATCH' }));
  });
});
