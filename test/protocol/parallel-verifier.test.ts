import type { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BlockRejectedError } from '../../src/errors/index.ts';
import {
  AggregateBuilder,
  assembleUpdate,
  type BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  decodeBlockBody,
  type EncodedUpdate,
  encodeBlockBody,
  encodeUpdate,
  FRAME_KIND,
  frame,
  ParallelBlockVerifier,
  type ParallelBlockVerifierOptions,
  type RoundContext,
  type SignerKey,
  sumUpdates,
  unframe,
  type VerifiedBlock,
  type VerifiedUpdate,
  VerifyWorkerError,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate, roundContext } from '../helpers/codec-fixture.ts';

// Records every worker thread started, so tests can see them exit or kill one.
const started = vi.hoisted(() => [] as Worker[]);
vi.mock('node:worker_threads', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:worker_threads')>();
  class RecordedWorker extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      super(...args);
      started.push(this);
    }
  }
  return { ...real, Worker: RecordedWorker };
});

function signerKeys(fx: CodecFixture): SignerKey[] {
  return [...fx.signers].map(([signer, k]) => ({
    signer,
    algorithm: k.algorithm,
    publicKey: k.publicKey,
    keyId: k.keyId,
  }));
}

/** Sequential outcome of one frame: the verified block, or the rejection. */
function sequential(v: BlockVerifier, bytes: Uint8Array): VerifiedBlock | BlockRejectedError {
  try {
    return v.verifyBlock(bytes);
  } catch (err) {
    if (err instanceof BlockRejectedError) return err;
    throw err;
  }
}

function summary(r: VerifiedBlock | BlockRejectedError): unknown {
  return r instanceof BlockRejectedError
    ? { reason: r.reason, message: r.message, details: { ...r.details } }
    : { ...r };
}

describe('ParallelBlockVerifier', () => {
  let fx: CodecFixture;
  let multi: EncodedUpdate; // several blocks
  let updates: EncodedUpdate[]; // one per site
  const open: ParallelBlockVerifier[] = [];

  const parallel = (o: Partial<ParallelBlockVerifierOptions> & { context?: RoundContext } = {}) => {
    const pv = new ParallelBlockVerifier({
      context: fx.context,
      ckksParamsId: fx.ctx.paramsId,
      keys: signerKeys(fx),
      allowedAlgorithms: ['falcon-512', 'ml-dsa-65'],
      ...o,
    });
    open.push(pv);
    return pv;
  };

  beforeAll(async () => {
    fx = await codecFixture(3);
    updates = fx.sites.map((credentials, s) =>
      encodeUpdate({
        update: randomUpdate(40_000, 11 + s, 0.04),
        residual: null,
        credentials,
        context: fx.context,
        options: DEFAULT_CODEC_OPTIONS,
        exampleWeight: 5 + s,
      }),
    );
    multi = updates[1]!;
    expect(multi.blocks.length).toBeGreaterThan(1);
  });

  afterAll(async () => {
    await Promise.all(open.map((pv) => pv.close()));
  });

  it('accepts good blocks and manifests exactly as BlockVerifier does', async () => {
    const pv = parallel();
    const seq = fx.verifier();
    const frames = multi.blocks.map((b) => b.slice()); // owned buffers: transferred
    const got = await pv.verifyBlocks(frames);
    expect(frames.every((f) => f.length === 0)).toBe(true); // detached by the transfer
    const want = multi.blocks.map((b) => seq.verifyBlock(b));
    expect(got).toHaveLength(want.length);
    for (let i = 0; i < want.length; i++) {
      const g = got[i]!;
      expect(g).not.toBeInstanceOf(BlockRejectedError);
      expect((g as VerifiedBlock).digest).toEqual(want[i]!.digest);
      expect(summary(g)).toEqual(summary(want[i]!));
    }
    const manifestFrame = multi.manifest.slice();
    expect(await pv.verifyManifest(manifestFrame)).toEqual(seq.verifyManifest(multi.manifest));
    expect(manifestFrame.length).toBe(0);
    expect(pv.counters.snapshot()).toEqual({});
  });

  it('copies frames that share a buffer, leaving them intact', async () => {
    const pv = parallel();
    const total = multi.blocks.reduce((a, b) => a + b.length, 0);
    const shared = new Uint8Array(total);
    const views: Uint8Array[] = [];
    let off = 0;
    for (const b of multi.blocks) {
      shared.set(b, off);
      views.push(shared.subarray(off, off + b.length));
      off += b.length;
    }
    const got = await pv.verifyBlocks(views);
    expect(shared.length).toBe(total);
    expect(got.map(summary)).toEqual(multi.blocks.map((b) => summary(fx.verifier().verifyBlock(b))));
    const kept = await parallel({ transferFrames: false }).verifyBlocks(multi.blocks.map((b) => b.slice()));
    expect(kept.every((r) => !(r instanceof BlockRejectedError))).toBe(true);
  });

  it('rejects each kind of bad block with the same reason, message and counters', async () => {
    const good = updates[0]!.blocks[0]!;
    const crcFlip = good.slice();
    crcFlip[12 + 8 + 1000]! ^= 0x10; // inside the ciphertext
    const block = decodeBlockBody(unframe(good, FRAME_KIND.block));
    block.latticeSignature = block.latticeSignature.slice();
    block.latticeSignature[20]! ^= 0x01;
    const sigFlip = frame(FRAME_KIND.block, encodeBlockBody(block));
    const truncated = good.subarray(0, 500);
    const random = new Uint8Array(4096).map((_, i) => (i * 2654435761) >>> 24);
    const batch = [good, crcFlip, sigFlip, truncated, random, multi.manifest, multi.blocks[1]!];

    const seq = fx.verifier();
    const pv = parallel({ transferFrames: false });
    const want = batch.map((b) => sequential(seq, b));
    const got = await pv.verifyBlocks(batch);
    expect(got.map(summary)).toEqual(want.map(summary));
    expect(got.map((r) => (r instanceof BlockRejectedError ? r.reason : 'ok'))).toEqual([
      'ok',
      'CRC_MISMATCH',
      'BAD_SIGNATURE',
      'TRUNCATED',
      'MALFORMED',
      'MALFORMED',
      'ok',
    ]);
    for (const r of got) if (r instanceof BlockRejectedError) expect(r.code).toBe(`BLOCK_${r.reason}`);
    expect(pv.counters.snapshot()).toEqual(seq.counters.snapshot());

    // Wrong round: a replay into round 8.
    const seq8 = fx.verifier({ context: roundContext(8) });
    const pv8 = parallel({ context: roundContext(8) });
    const wrongRound = await pv8.verifyBlocks(multi.blocks.map((b) => b.slice()));
    expect(wrongRound.map(summary)).toEqual(multi.blocks.map((b) => summary(sequential(seq8, b))));
    expect(wrongRound.every((r) => r instanceof BlockRejectedError && r.reason === 'WRONG_CONTEXT')).toBe(
      true,
    );
    const manifestErr = await pv8.verifyManifest(multi.manifest.slice()).catch((e: unknown) => e);
    expect(manifestErr).toBeInstanceOf(BlockRejectedError);
    expect((manifestErr as BlockRejectedError).reason).toBe('WRONG_CONTEXT');
    expect(() => seq8.verifyManifest(multi.manifest)).toThrow(BlockRejectedError);
    expect(pv8.counters.snapshot()).toEqual(seq8.counters.snapshot());
    expect(pv8.counters.get('WRONG_CONTEXT')).toBe(multi.blocks.length + 1);
  });

  it('a pipeline of several updates sums to the same aggregate as the sequential path', async () => {
    const seq = fx.verifier();
    const sequentialSum = sumUpdates(
      fx.ctx,
      updates.map((e) =>
        assembleUpdate(
          seq.verifyManifest(e.manifest),
          e.blocks.map((b) => seq.verifyBlock(b)),
        ),
      ),
    );
    const pv = parallel({ workers: 2 });
    const verify = async (e: EncodedUpdate): Promise<VerifiedUpdate> => {
      const [manifest, blocks] = await Promise.all([
        pv.verifyManifest(e.manifest.slice()),
        pv.verifyBlocks(e.blocks.map((b) => b.slice())),
      ]);
      return assembleUpdate(
        manifest,
        blocks.map((b) => {
          if (b instanceof BlockRejectedError) throw b;
          return b;
        }),
      );
    };
    const builder = new AggregateBuilder(fx.ctx);
    let next = verify(updates[0]!);
    for (let k = 0; k < updates.length; k++) {
      const update = await next;
      if (k + 1 < updates.length) next = verify(updates[k + 1]!); // verified while update k is added
      builder.add(update);
    }
    const pipelined = builder.finish();
    expect(pipelined.sites).toEqual(sequentialSum.sites);
    expect(pipelined.totalWeight).toBe(sequentialSum.totalWeight);
    const a = decodeAggregate(fx.keyset, pipelined, fx.mac());
    const b = decodeAggregate(fx.keyset, sequentialSum, fx.mac());
    expect(a.contributors).toBe(3);
    expect(a.laneSums).toEqual(b.laneSums);
  });

  it('close() terminates every worker and rejects pending and later calls', async () => {
    const before = started.length;
    const pv = parallel({ workers: 2 });
    const threads = started.slice(before);
    expect(threads).toHaveLength(2);
    const exited = threads.map((w) => new Promise((resolve) => w.once('exit', resolve)));
    await pv.verifyBlocks([multi.blocks[0]!.slice()]);
    expect(pv.liveWorkers).toBe(2);
    const pending = pv.verifyBlocks(multi.blocks.map((b) => b.slice()));
    const closed = pv.close();
    const err = await pending.catch((e: unknown) => e);
    // The batch may have been answered before close(); otherwise it is refused as closed.
    if (err instanceof Error) {
      expect(err).toBeInstanceOf(VerifyWorkerError);
      expect((err as VerifyWorkerError).code).toBe('VERIFY_WORKER_CLOSED');
    }
    await closed;
    await Promise.all(exited); // every thread has exited
    expect(threads.every((w) => w.threadId === -1)).toBe(true);
    expect(pv.liveWorkers).toBe(0);
    await expect(pv.verifyManifest(multi.manifest)).rejects.toMatchObject({ code: 'VERIFY_WORKER_CLOSED' });
    await pv.close(); // idempotent
  });

  it('a worker crash rejects pending calls with VerifyWorkerError', async () => {
    const before = started.length;
    const pv = parallel();
    expect(started.length).toBe(before + 1);
    const pending = pv.verifyBlocks(multi.blocks.map((b) => b.slice()));
    void started[before]!.terminate(); // dies under the verifier: an exit it did not ask for
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VerifyWorkerError);
    expect((err as VerifyWorkerError).code).toBe('VERIFY_WORKER_CRASHED');
    await expect(pv.verifyManifest(multi.manifest)).rejects.toMatchObject({ code: 'VERIFY_WORKER_CRASHED' });
    await pv.close();
    expect(pv.liveWorkers).toBe(0);
  });

  it('refuses bad options on the calling thread', () => {
    expect(() => parallel({ ckksParamsId: new Uint8Array(3) })).toThrow(/ckksParamsId/);
    const keys = signerKeys(fx);
    expect(() => parallel({ keys: [...keys, keys[0]!] })).toThrow(/two keys/);
    expect(() => parallel({ workers: 0 })).toThrow(/workers/);
  });
});
