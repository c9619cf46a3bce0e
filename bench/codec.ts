import { availableParallelism } from 'node:os';
import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../crypto/ckks/index.ts';
import { AggregateMacKey } from '../crypto/mac/index.ts';
import { generateSigningKeyPair, type SignatureAlgorithm, sign, verify } from '../crypto/signature/index.ts';
import type { QuantBits } from '../federation/index.ts';
import { BlockRejectedError } from '../src/errors/index.ts';
import {
  AggregateBuilder,
  assembleUpdate,
  BlockVerifier,
  codecEncoding,
  DEFAULT_CODEC_OPTIONS,
  type EncodedUpdate,
  encodeUpdate,
  ParallelBlockVerifier,
  type RoundContext,
  type RoundMac,
  type SiteCredentials,
  updateLayout,
  type VerifiedUpdate,
} from '../src/protocol/index.ts';
import { bareEncryptor, bareLoadAdd, benchSlots } from './codec-seal-floor.ts';
import { SiteWorkerPool } from './codec-site-pool.ts';
import { type BenchRow, printTable, timeIt, writeResults } from './table.ts';

const PARAMS = Number(process.env.COHORT_BENCH_PARAMS ?? 1_000_000);
const SITES = 8;
/** Worker threads of the all-core site pipeline: every core unless `COHORT_BENCH_WORKERS` says. */
const WORKERS = Number(process.env.COHORT_BENCH_WORKERS ?? availableParallelism());
/** Bit widths whose rows docs/results.md shows; the others are detail rows of the JSON. */
const SHOWN_BITS: readonly QuantBits[] = [8, 1];
const SITE_FLOOR_1 = 'SEAL encode+encrypt alone, 1 thread';
const siteFloorAll = `SEAL encode+encrypt alone, ${WORKERS} threads`;
const AGG_FLOOR = 'SEAL load+add alone, 1 thread';

function pseudoRandomUpdate(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = ((x / 2 ** 32) * 2 - 1) * 0.05;
  }
  return out;
}

/** {@link timeIt} for an async `fn`: a warm-up run, then at least `minRuns` runs and `minMs`; ms per run. */
async function timeItAsync(fn: () => Promise<void>, minMs = 300, minRuns = 3): Promise<number> {
  await fn();
  let runs = 0;
  const start = performance.now();
  let elapsed = 0;
  while (runs < minRuns || elapsed < minMs) {
    await fn();
    runs++;
    elapsed = performance.now() - start;
  }
  return elapsed / runs;
}

/** Throws unless `got` equals `want`, naming `what`: the bench never measures a wrong pipeline. */
function assertSame(what: string, got: ArrayLike<number>, want: ArrayLike<number>): void {
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} values, expected ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i]) throw new Error(`${what}: value ${i} is ${got[i]}, expected ${want[i]}`);
  }
}

/**
 * Codec benchmark, every throughput beside its floor measured in the same run:
 * - wire bytes per parameter (vs fp32 and a public-key top-level CKKS encoding);
 * - the site pipeline (quantize + pack + encrypt + sign) on one thread beside SEAL's bare
 *   encode+encrypt of the same number of ciphertexts on one thread, and on every core (worker
 *   threads split the update's blocks, this thread signs) beside the bare encode+encrypt on as many
 *   threads: params/s of the whole machine;
 * - the aggregator (verify + add of 8 sites' updates, on one thread and with verification on a
 *   worker thread) beside SEAL's bare load+add of the same ciphertexts, in MB/s of those bytes;
 * - signatures per block, and RSS over a 2,000-block encoding loop.
 */
export async function runCodecBench(): Promise<BenchRow[]> {
  const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const keyset = CkksKeyset.create(ctx);
  const context: RoundContext = { federation: 'bench', round: 1, version: 0, baseCommit: new Uint8Array(32) };
  const mac: RoundMac = {
    key: AggregateMacKey.random(),
    nonce: { federation: 'bench', round: 1, attempt: new Uint8Array(0) },
  };
  const sites: SiteCredentials[] = Array.from({ length: SITES }, (_, i) => ({
    signer: `site-${i}`,
    ckks: keyset,
    signing: generateSigningKeyPair('falcon-512'),
    mac,
  }));
  const keys = new Map(sites.map((s) => [s.signer, s.signing]));
  const update = pseudoRandomUpdate(PARAMS, 1);
  const rows: BenchRow[] = [];
  const verifier = () =>
    new BlockVerifier({
      context,
      ckksParamsId: ctx.paramsId,
      keys: (s) => keys.get(s),
      allowedAlgorithms: ['falcon-512'],
    });

  // Baseline: public-key encryption at the top level, one value per slot (no packing).
  {
    const { seal, context: sealCtx, encoder } = ctx;
    const kg = new seal.KeyGenerator(sealCtx);
    const pk = kg.createPublicKey();
    const enc = new seal.Encryptor(sealCtx, pk);
    const plain = new seal.Plaintext();
    encoder.encode(Float64Array.from(update.subarray(0, ctx.slots)), 2 ** 40, plain);
    const ser = enc.encryptSerializable(plain);
    const bytes = (ser.saveToArray(seal.ComprModeType.none) as Uint8Array).length;
    for (const o of [ser, plain, enc, pk, kg]) o.delete();
    rows.push({ section: 'wire', metric: 'fp32 plaintext', value: 4, unit: 'B/param', compare: 'baseline' });
    rows.push({
      section: 'wire',
      metric: 'CKKS public-key, top level, 1 value/slot',
      value: bytes / ctx.slots,
      unit: 'B/param',
      compare: 'baseline',
    });
  }

  const encoded = new Map<QuantBits, EncodedUpdate[]>();
  const siteRows: BenchRow[] = [];
  const bare = bareEncryptor(ctx);
  const slots = benchSlots(ctx);
  const pool = await SiteWorkerPool.start(WORKERS, keyset, update, context, DEFAULT_CODEC_OPTIONS, mac);
  try {
    for (const bits of [1, 2, 4, 8] as QuantBits[]) {
      const detail = SHOWN_BITS.includes(bits) ? {} : { detail: true as const };
      const options = { ...DEFAULT_CODEC_OPTIONS, bits };
      const blockCount = updateLayout(PARAMS, codecEncoding(ctx, options)).blocks;
      const run = (s: number) =>
        encodeUpdate({ update, residual: null, credentials: sites[s]!, context, options, exampleWeight: 1 });
      const ms = timeIt(() => run(0), 1500, 2);
      const floorMs = timeIt(() => bare.encrypt(slots, blockCount), 800, 2);
      const all = sites.map((_, s) => run(s));
      encoded.set(bits, all);
      const wire = all[0]!.blocks.reduce((a, b) => a + b.length, 0) + all[0]!.manifest.length;
      const goal = bits === 8 ? 6 : bits <= 2 ? 3 : undefined;
      rows.push({
        section: 'wire',
        metric: `Cohort ${bits}-bit (${all[0]!.blocks.length} blocks)`,
        value: wire / PARAMS,
        unit: 'B/param',
        compare: goal ? `≤ ${goal}` : '',
        pass: goal ? wire / PARAMS <= goal : undefined,
        ...detail,
      });
      const one = PARAMS / (ms / 1000);
      siteRows.push({
        section: 'site',
        metric: `quantize+pack+encrypt+sign, ${bits}-bit, 1 thread`,
        value: one,
        unit: 'params/s',
        compare: '≥ 10,000,000 per core',
        pass: one >= 10_000_000,
        floor: { metric: SITE_FLOOR_1, value: PARAMS / (floorMs / 1000) },
        ...detail,
      });

      // The same pipeline on every core. First, once: the pool's update must be the one
      // encodeUpdate emits (same levels for the same rounding seed, blocks that verify and decrypt alike).
      const seed = { key0: 7, key1: context.round };
      const check = await pool.encode(bits, seed, sites[0]!, true);
      const single = encodeUpdate({
        update,
        residual: null,
        credentials: sites[0]!,
        context,
        options,
        exampleWeight: 1,
        roundingSeed: seed,
      });
      assertSame(`${bits}-bit levels of the ${WORKERS}-thread pipeline`, check.levels!, single.levels);
      const v = verifier();
      const pooled = assembleUpdate(
        v.verifyManifest(check.manifest),
        check.blocks.map((b) => v.verifyBlock(b)),
      );
      const last = blockCount - 1;
      const round = (x: Float64Array) => Array.from(x, Math.round);
      assertSame(
        `${bits}-bit last block of the ${WORKERS}-thread pipeline, decrypted`,
        round(keyset.decrypt(pooled.ciphertexts[last]!)),
        round(keyset.decrypt(v.verifyBlock(single.blocks[last]!).ciphertext)),
      );
      const allMs = await timeItAsync(
        async () => {
          await pool.encode(bits, seed, sites[0]!);
        },
        1500,
        2,
      );
      const allFloorMs = await timeItAsync(() => pool.bare(blockCount), 800, 2);
      const machine = PARAMS / (allMs / 1000);
      siteRows.push({
        section: 'site',
        metric: `same, ${bits}-bit, ${WORKERS} threads (whole machine)`,
        value: machine,
        unit: 'params/s',
        compare: `${(machine / one).toFixed(2)}× 1 thread`,
        floor: { metric: siteFloorAll, value: PARAMS / (allFloorMs / 1000) },
        ...detail,
      });
    }
  } finally {
    bare.delete();
    await pool.close();
  }
  rows.push(...siteRows);

  // Aggregator: verify every block and manifest of 8 updates, assemble, add; beside SEAL's bare
  // load+add of the same ciphertexts.
  for (const bits of [8, 1] as QuantBits[]) {
    const detail = bits === 8 ? {} : { detail: true as const };
    const all = encoded.get(bits)!;
    const ctBytes = all.reduce((a, e) => a + e.blocks.reduce((x, b) => x + b.length, 0), 0);
    const v = verifier();
    const ciphertexts = all.map((e) => e.blocks.map((b) => v.verifyBlock(b).ciphertext));
    const sealBytes = ciphertexts.reduce((a, cts) => a + cts.reduce((x, c) => x + c.length, 0), 0);
    const floorMs = timeIt(() => bareLoadAdd(ctx, ciphertexts), 1000, 2);
    // MB/s of the block frames, as the aggregator rows count; SEAL itself reads the ciphertexts only.
    const floor = { metric: AGG_FLOOR, value: ctBytes / 1e6 / (floorMs / 1000) };
    const ms = timeIt(
      () => {
        const verifier = new BlockVerifier({
          context,
          ckksParamsId: ctx.paramsId,
          keys: (s) => keys.get(s),
          allowedAlgorithms: ['falcon-512'],
        });
        const builder = new AggregateBuilder(ctx);
        for (const e of all) {
          builder.add(
            assembleUpdate(
              verifier.verifyManifest(e.manifest),
              e.blocks.map((b) => verifier.verifyBlock(b)),
            ),
          );
        }
        builder.dispose();
      },
      2000,
      2,
    );
    const mbps = ctBytes / 1e6 / (ms / 1000);
    rows.push({
      section: 'aggregator',
      metric: `verify+add, ${SITES} sites, ${bits}-bit, 1 thread`,
      value: mbps,
      unit: 'MB/s',
      compare: '≥ 300',
      pass: mbps >= 300,
      floor,
      ...detail,
    });

    // Same data, pipelined: a worker thread verifies update k+1 while this thread adds update k.
    // Frames are copied to the worker (transferFrames: false keeps the data for the next run; the
    // copy is timed). A one-entry signature cache makes each run verify the 8 update signatures
    // afresh, as the fresh BlockVerifier per run above does.
    const parallel = new ParallelBlockVerifier({
      context,
      ckksParamsId: ctx.paramsId,
      keys: sites.map((s) => ({
        signer: s.signer,
        algorithm: s.signing.algorithm,
        publicKey: s.signing.publicKey,
        keyId: s.signing.keyId,
      })),
      allowedAlgorithms: ['falcon-512'],
      signatureCacheSize: 1,
      transferFrames: false,
    });
    try {
      const verified = async (e: EncodedUpdate): Promise<VerifiedUpdate> => {
        const [manifest, blocks] = await Promise.all([
          parallel.verifyManifest(e.manifest),
          parallel.verifyBlocks(e.blocks),
        ]);
        return assembleUpdate(
          manifest,
          blocks.map((b) => {
            if (b instanceof BlockRejectedError) throw b;
            return b;
          }),
        );
      };
      const pipelinedMs = await timeItAsync(
        async () => {
          const builder = new AggregateBuilder(ctx);
          try {
            let next = verified(all[0]!);
            for (let k = 0; k < all.length; k++) {
              const current = await next;
              if (k + 1 < all.length) next = verified(all[k + 1]!);
              builder.add(current);
            }
          } finally {
            builder.dispose();
          }
        },
        2000,
        2,
      );
      const pipelinedMbps = ctBytes / 1e6 / (pipelinedMs / 1000);
      rows.push({
        section: 'aggregator',
        metric: `verify on a worker thread + add, ${SITES} sites, ${bits}-bit`,
        value: pipelinedMbps,
        unit: 'MB/s',
        compare: '≥ 300',
        pass: pipelinedMbps >= 300,
        floor,
        ...detail,
      });
      rows.push({
        section: 'aggregator',
        metric: `ciphertext share of the block frames, ${bits}-bit`,
        value: sealBytes / ctBytes,
        unit: '',
        compare: '',
        detail: true,
      });
    } finally {
      await parallel.close();
    }
  }

  // Signatures: per block if each block were signed alone, and amortized as Cohort signs (once per update).
  const blocksPerUpdate = encoded.get(8)![0]!.blocks.length;
  for (const alg of ['falcon-512', 'ml-dsa-65'] as SignatureAlgorithm[]) {
    const kp = generateSigningKeyPair(alg);
    const msg = new Uint8Array(400).fill(7);
    let sig = sign(kp, 'bench', msg);
    const signMs = timeIt(
      () => {
        sig = sign(kp, 'bench', msg);
      },
      500,
      5,
    );
    const verifyMs = timeIt(
      () => {
        verify(kp, 'bench', msg, sig);
      },
      300,
      5,
    );
    const shown = alg === 'falcon-512' ? {} : { detail: true as const };
    rows.push({
      section: 'signature',
      metric: `${alg} sign, one signature`,
      value: signMs,
      unit: 'ms',
      compare: '',
      detail: true,
    });
    rows.push({
      section: 'signature',
      metric: `${alg} verify, one signature`,
      value: verifyMs,
      unit: 'ms',
      compare: '',
      detail: true,
    });
    rows.push({
      section: 'signature',
      metric: `${alg} sign, amortized over the ${blocksPerUpdate} blocks of an 8-bit update`,
      value: signMs / blocksPerUpdate,
      unit: 'ms/block',
      compare: '',
      ...shown,
    });
    rows.push({
      section: 'signature',
      metric: `${alg} signature size`,
      value: sig.length,
      unit: 'B',
      compare: '',
      detail: true,
    });
  }

  // Memory: RSS across a 2,000-block encoding loop.
  {
    const options = { ...DEFAULT_CODEC_OPTIONS, bits: 8 as const };
    const chunk = update.subarray(0, ctx.slots * 3 * 50); // 50 blocks per update
    let blocks = 0;
    const loop = (n: number) => {
      for (let done = 0; done < n; ) {
        done += encodeUpdate({
          update: chunk,
          residual: null,
          credentials: sites[0]!,
          context,
          options,
          exampleWeight: 1,
        }).blocks.length;
        blocks += 50;
      }
    };
    loop(200);
    const before = process.memoryUsage().rss;
    loop(2000);
    const after = process.memoryUsage().rss;
    const delta = (after - before) / 2 ** 20;
    const growth = `${delta < 0 ? '−' : '+'}${Math.abs(delta).toFixed(1)}`;
    rows.push({
      section: 'memory',
      metric: 'RSS before 2,000-block loop',
      value: before / 2 ** 20,
      unit: 'MiB',
      compare: '',
      detail: true,
    });
    rows.push({
      section: 'memory',
      metric: `RSS after ${blocks.toLocaleString('en-US')} blocks encoded (${growth} MiB)`,
      value: after / 2 ** 20,
      unit: 'MiB',
      compare: 'flat (< +48 MiB)',
      pass: after - before < 48 * 2 ** 20,
    });
  }
  keyset.delete();

  printTable(
    `codec benchmark: ${PARAMS.toLocaleString('en-US')} parameters, ${SITES} sites, site pipeline on 1 and ${WORKERS} threads`,
    rows,
  );
  const path = writeResults('codec', rows, {
    params: PARAMS,
    sites: SITES,
    workers: WORKERS,
    ckks: DEFAULT_CKKS_PARAMS,
  });
  console.log(`\nwrote ${path}`);
  return rows;
}
