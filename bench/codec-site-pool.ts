// The site pipeline on every core, for the codec bench: worker threads (one SEAL runtime each)
// quantize, pack and encrypt contiguous ranges of one update's blocks; this thread signs the whole
// update once (`signBlocks`, as `encodeUpdate` does), so the result is one ordinary update.
import { Worker } from 'node:worker_threads';
import type { CkksKeyset, CkksParams } from '../crypto/ckks/index.ts';
import {
  type CodecBits,
  type CodecOptions,
  codecEncoding,
  macTag,
  type RoundContext,
  type RoundMac,
  type SignedBlocks,
  type SiteCredentials,
  signBlocks,
  updateLayout,
  writeTagLimbs,
} from '../src/protocol/index.ts';

/** What each worker is started with: the update and residual live in shared memory. */
export interface SiteWorkerData {
  readonly ckks: CkksParams;
  readonly secretKey: Uint8Array;
  readonly context: RoundContext;
  readonly codec: Omit<CodecOptions, 'bits'>;
  readonly update: SharedArrayBuffer;
  readonly residual: SharedArrayBuffer;
  /** The aggregate MAC's key bytes and the round's nonce (the bench's own random key). */
  readonly macKey: Uint8Array;
  readonly macNonce: { readonly federation: string; readonly round: number; readonly attempt: Uint8Array };
}

/** One request to a worker: encode blocks [firstBlock, endBlock), or run the bare SEAL floor. */
export type SiteWorkerRequest =
  | {
      readonly id: number;
      readonly kind: 'encode';
      readonly bits: CodecBits;
      readonly seed: { readonly key0: number; readonly key1: number };
      readonly firstBlock: number;
      readonly endBlock: number;
      /** Send the range's levels back too (for the bench's equality check). */
      readonly returnLevels: boolean;
    }
  | { readonly id: number; readonly kind: 'bare'; readonly count: number };

/** A worker's answer (`id` −1: started). */
export interface SiteWorkerReply {
  readonly id: number;
  readonly ciphertexts?: Uint8Array[];
  /** Blocks of the range that hold the tag's limbs, packed but not encrypted. */
  readonly packed?: { readonly block: number; readonly slots: Float64Array }[];
  /** The range's part of the tag's linear sum (mod p). */
  readonly macPart?: bigint;
  readonly levels?: Uint8Array;
  readonly error?: string;
}

/** An update encoded by the pool: signed blocks and manifest, and (when asked) its levels. */
export interface PoolEncoded extends SignedBlocks {
  readonly levels: Uint8Array | undefined;
}

/** `count` items split into `parts` contiguous ranges as even as possible, empty ones dropped. */
function split(count: number, parts: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < parts; i++) {
    const a = Math.floor((count * i) / parts);
    const b = Math.floor((count * (i + 1)) / parts);
    if (b > a) out.push([a, b]);
  }
  return out;
}

/** Worker threads that encode one update's blocks together (see the file comment). */
export class SiteWorkerPool {
  readonly workers: number;
  readonly #threads: Worker[];
  readonly #update: Float32Array;
  readonly #context: RoundContext;
  readonly #codec: Omit<CodecOptions, 'bits'>;
  readonly #keyset: CkksKeyset;
  #nextId = 0;

  private constructor(threads: Worker[], update: Float32Array, data: SiteWorkerData, keyset: CkksKeyset) {
    this.workers = threads.length;
    this.#threads = threads;
    this.#update = update;
    this.#context = data.context;
    this.#codec = data.codec;
    this.#keyset = keyset;
  }

  /**
   * Starts `workers` threads, each with its own SEAL runtime and the site's CKKS key, sharing a
   * copy of `update`; resolves once every one is ready.
   */
  static async start(
    workers: number,
    keyset: CkksKeyset,
    update: Float32Array,
    context: RoundContext,
    codec: Omit<CodecOptions, 'bits'>,
    mac: RoundMac,
  ): Promise<SiteWorkerPool> {
    if (!Number.isInteger(workers) || workers < 1) throw new Error(`workers ${workers}, expects ≥ 1`);
    const shared = new SharedArrayBuffer(update.byteLength);
    const view = new Float32Array(shared);
    view.set(update);
    const secretKey = keyset.exportSecretKey();
    const data: SiteWorkerData = {
      ckks: keyset.ctx.params,
      secretKey,
      context,
      codec,
      update: shared,
      residual: new SharedArrayBuffer(update.byteLength),
      macKey: new Uint8Array(mac.key.bytes()),
      macNonce: mac.nonce,
    };
    const threads: Worker[] = [];
    try {
      for (let i = 0; i < workers; i++) {
        threads.push(new Worker(new URL('./codec-site-worker.ts', import.meta.url), { workerData: data }));
      }
      await Promise.all(threads.map((t) => answer(t)));
    } catch (err) {
      await Promise.all(threads.map((t) => t.terminate()));
      throw err;
    } finally {
      secretKey.fill(0);
    }
    return new SiteWorkerPool(threads, view, data, keyset);
  }

  /**
   * Encodes the whole update at `bits` with its blocks split across the workers, then signs it
   * here: the same blocks `encodeUpdate` would emit (levels equal for the same `seed`).
   */
  async encode(
    bits: CodecBits,
    seed: { key0: number; key1: number },
    signer: SiteCredentials,
    returnLevels = false,
  ): Promise<PoolEncoded> {
    const options: CodecOptions = { ...this.#codec, bits };
    const encoding = codecEncoding(this.#keyset.ctx, options);
    const totalParams = this.#update.length;
    const geometry = updateLayout(totalParams, encoding);
    const parts = await Promise.all(
      split(geometry.blocks, this.workers).map(([firstBlock, endBlock], i) =>
        this.#request(i, { id: 0, kind: 'encode', bits, seed, firstBlock, endBlock, returnLevels }),
      ),
    );
    // The tag needs every range's part; the blocks holding its limbs are encrypted here.
    const tag = macTag(
      signer.mac,
      signer.signer,
      parts.reduce((a, p) => a + p.macPart!, 0n),
    );
    const ciphertexts = parts.flatMap((p) => [
      ...p.ciphertexts!,
      ...p.packed!.map(({ block, slots }) => {
        writeTagLimbs(geometry, block, slots, tag);
        return this.#keyset.encrypt(slots);
      }),
    ]);
    const signed = signBlocks(
      this.#context,
      signer.signer,
      signer.signing,
      { totalParams, exampleWeight: 1, encoding, crcChunkBytes: options.crcChunkBytes },
      ciphertexts,
      options.shardCount ?? 1,
      [],
    );
    let levels: Uint8Array | undefined;
    if (returnLevels) {
      levels = new Uint8Array(totalParams);
      let at = 0;
      for (const p of parts) {
        const own = p.levels!.subarray(0, Math.max(0, Math.min(p.levels!.length, totalParams - at)));
        levels.set(own, at);
        at += p.levels!.length;
      }
    }
    return { ...signed, levels };
  }

  /** The bare SEAL floor on every worker: `blocks` encode+encrypt operations split across them. */
  async bare(blocks: number): Promise<void> {
    await Promise.all(
      split(blocks, this.workers).map(([a, b], i) => this.#request(i, { id: 0, kind: 'bare', count: b - a })),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.#threads.map((t) => t.terminate()));
  }

  #request(worker: number, req: SiteWorkerRequest): Promise<SiteWorkerReply> {
    const id = this.#nextId++;
    const thread = this.#threads[worker]!;
    const reply = answer(thread, id);
    thread.postMessage({ ...req, id });
    return reply;
  }
}

/** The next reply of `thread` (which must carry `id`), rejecting on a worker error or exit. */
function answer(thread: Worker, id = -1): Promise<SiteWorkerReply> {
  return new Promise((resolve, reject) => {
    const done = () => {
      thread.off('message', onMessage);
      thread.off('error', onError);
      thread.off('exit', onExit);
    };
    const onMessage = (m: SiteWorkerReply) => {
      done();
      if (m.error !== undefined) reject(new Error(`codec site worker: ${m.error}`));
      else if (m.id !== id) reject(new Error(`codec site worker answered ${m.id}, expected ${id}`));
      else resolve(m);
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onExit = (code: number) => {
      done();
      reject(new Error(`codec site worker exited with code ${code}`));
    };
    thread.on('message', onMessage);
    thread.on('error', onError);
    thread.on('exit', onExit);
  });
}
