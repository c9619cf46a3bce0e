import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../crypto/ckks/index.ts';
import { generateSigningKeyPair, type SignatureAlgorithm, sign, verify } from '../crypto/signature/index.ts';
import type { QuantBits } from '../federation/index.ts';
import { BlockRejectedError } from '../src/errors/index.ts';
import {
  AggregateBuilder,
  assembleUpdate,
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  type EncodedUpdate,
  encodeUpdate,
  ParallelBlockVerifier,
  type RoundContext,
  type SiteCredentials,
  type VerifiedUpdate,
} from '../src/protocol/index.ts';
import { type BenchRow, printTable, timeIt, writeResults } from './table.ts';

const PARAMS = Number(process.env.COHORT_BENCH_PARAMS ?? 1_000_000);
const SITES = 8;

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

/**
 * Codec benchmark, all measured in one run on one core (except the worker-thread aggregator row,
 * which verifies on a second thread):
 * wire bytes per parameter (vs fp32 and a public-key top-level CKKS encoding), the site pipeline
 * (quantize + pack + encrypt + sign), the aggregator (verify + add), signatures per block, and
 * RSS over a 2,000-block encoding loop.
 */
export async function runCodecBench(): Promise<BenchRow[]> {
  const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const keyset = CkksKeyset.create(ctx);
  const context: RoundContext = { federation: 'bench', round: 1, version: 0, baseCommit: new Uint8Array(32) };
  const sites: SiteCredentials[] = Array.from({ length: SITES }, (_, i) => ({
    signer: `site-${i}`,
    ckks: keyset,
    signing: generateSigningKeyPair('falcon-512'),
  }));
  const keys = new Map(sites.map((s) => [s.signer, s.signing]));
  const update = pseudoRandomUpdate(PARAMS, 1);
  const rows: BenchRow[] = [];

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
      compare: 'baseline (≈ 57 B)',
    });
  }

  const encoded = new Map<QuantBits, EncodedUpdate[]>();
  for (const bits of [1, 2, 4, 8] as QuantBits[]) {
    const options = { ...DEFAULT_CODEC_OPTIONS, bits };
    const run = (s: number) =>
      encodeUpdate({ update, residual: null, credentials: sites[s]!, context, options, exampleWeight: 1 });
    const ms = timeIt(() => run(0), 1500, 2);
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
    });
    rows.push({
      section: 'site',
      metric: `quantize+pack+encrypt+sign, ${bits}-bit`,
      value: PARAMS / (ms / 1000),
      unit: 'params/s/core',
      compare: '≥ 10,000,000',
      pass: PARAMS / (ms / 1000) >= 10_000_000,
    });
  }

  // Aggregator: verify every block and manifest of 8 updates, assemble, add.
  for (const bits of [8, 1] as QuantBits[]) {
    const all = encoded.get(bits)!;
    const ctBytes = all.reduce((a, e) => a + e.blocks.reduce((x, b) => x + b.length, 0), 0);
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
      metric: `verify+add, ${SITES} sites, ${bits}-bit`,
      value: mbps,
      unit: 'MB/s',
      compare: '≥ 300',
      pass: mbps >= 300,
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
    rows.push({
      section: 'signature',
      metric: `${alg} sign, per block`,
      value: signMs,
      unit: 'ms',
      compare: '',
    });
    rows.push({
      section: 'signature',
      metric: `${alg} verify, per block`,
      value: verifyMs,
      unit: 'ms',
      compare: '',
    });
    rows.push({
      section: 'signature',
      metric: `${alg} sign, amortized over ${blocksPerUpdate} blocks (8-bit, 1M)`,
      value: signMs / blocksPerUpdate,
      unit: 'ms/block',
      compare: '',
    });
    rows.push({
      section: 'signature',
      metric: `${alg} signature size`,
      value: sig.length,
      unit: 'B',
      compare: '',
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
    rows.push({
      section: 'memory',
      metric: 'RSS before 2,000-block loop',
      value: before / 2 ** 20,
      unit: 'MiB',
      compare: '',
    });
    rows.push({
      section: 'memory',
      metric: `RSS after (${blocks} blocks encoded)`,
      value: after / 2 ** 20,
      unit: 'MiB',
      compare: 'flat (< +48 MiB)',
      pass: after - before < 48 * 2 ** 20,
    });
  }
  keyset.delete();

  printTable(`codec benchmark: ${PARAMS.toLocaleString('en-US')} parameters, ${SITES} sites, one core`, rows);
  const path = writeResults('codec', rows, { params: PARAMS, sites: SITES, ckks: DEFAULT_CKKS_PARAMS });
  console.log(`\nwrote ${path}`);
  return rows;
}
