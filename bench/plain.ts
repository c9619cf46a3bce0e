// `npm run bench -- plain`: what `plain` mode costs beside `he` mode, and what each robust rule
// costs the coordinator beside the plain mean, in one run (issue 12).
//
// MNIST 2NN updates (199,210 parameters, Gaussian values of RMS 3e-3), 8-bit lanes with 32
// contributors of headroom, the default CKKS parameters (N = 8192) and Falcon-512.
//   site encode      `encodeUpdate` (quantize with error feedback, pack, payloads, sign), plain
//                    payloads beside CKKS encryption
//   aggregator sum   `AggregateBuilder` over 10 verified updates, plain integers beside CKKS
//   coordinator      reading 10 stored updates back (verify, decode each alone: `plainUpdateDelta`),
//                    beside decoding their sum once; then each rule (`applyRobustRule`) beside
//                    the unweighted mean of the same updates
import {
  CkksKeyset,
  DEFAULT_CKKS_PARAMS,
  getCkksContext,
  PlainLaneContext,
  PlainLaneKeyset,
} from '../crypto/ckks/index.ts';
import type { LaneKeyset } from '../crypto/lanes/index.ts';
import { AggregateMacKey } from '../crypto/mac/index.ts';
import { generateSigningKeyPair, type SigningKeyPair } from '../crypto/signature/index.ts';
import { MNIST_2NN, parameterCount, type RobustRule } from '../federation/index.ts';
import {
  AggregateBuilder,
  BlockVerifier,
  decodeAggregate,
  encodeUpdate,
  type RoundContext,
  type RoundMac,
  type VerifiedUpdate,
} from '../src/protocol/index.ts';
import { applyRobustRule, plainUpdateDelta } from '../src/services/robust-plan.ts';
import { gaussianUpdate } from './synthetic-update.ts';
import { type BenchRow, printTable, timeIt, writeResults } from './table.ts';

const SITES = 10;
const OPTIONS = { bits: 8 as const, clip: 0.02, maxContributors: 32, crcChunkBytes: 16_384 };

export async function runPlainBench(): Promise<void> {
  const d = parameterCount(MNIST_2NN);
  const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const heKeys = CkksKeyset.create(ckks);
  const plain = new PlainLaneContext(DEFAULT_CKKS_PARAMS);
  const plainKeys = new PlainLaneKeyset(plain);
  const context: RoundContext = { federation: 'bench', round: 1, version: 0, baseCommit: new Uint8Array(32) };
  const sites = Array.from({ length: SITES }, (_, i) => `site-${String(i).padStart(2, '0')}`);
  const signers = new Map(sites.map((s) => [s, generateSigningKeyPair('falcon-512')]));
  const updates = sites.map(() => gaussianUpdate(d, 3e-3));
  const mac: RoundMac = {
    key: AggregateMacKey.random(),
    nonce: { federation: 'bench', round: 1, attempt: new Uint8Array(0) },
  };
  try {
    const encode = (keys: LaneKeyset, k: number) =>
      encodeUpdate({
        update: updates[k]!,
        residual: null,
        credentials: { signer: sites[k]!, ckks: keys, signing: signers.get(sites[k]!)!, mac },
        context,
        options: OPTIONS,
        exampleWeight: 600,
      });
    const bytesOf = (e: { manifest: Uint8Array; blocks: Uint8Array[] }) =>
      e.manifest.length + e.blocks.reduce((a, b) => a + b.length, 0);
    const heEncodeMs = timeIt(() => encode(heKeys, 0), 2000);
    const plainEncodeMs = timeIt(() => encode(plainKeys, 0), 2000);
    const verify = (keys: LaneKeyset, signers: ReadonlyMap<string, SigningKeyPair>): VerifiedUpdate[] => {
      const verifier = new BlockVerifier({
        context,
        ckksParamsId: keys.ctx.paramsId,
        keys: (s) => signers.get(s),
        allowedAlgorithms: ['falcon-512'],
        maxCiphertextBytes: keys.ctx.maxCiphertextBytes,
      });
      return sites.map((_, k) => {
        const e = encode(keys, k);
        return verifier.verifyUpdate({ blocks: e.blocks, manifest: e.manifest });
      });
    };
    const heUpdates = verify(heKeys, signers);
    const plainUpdates = verify(plainKeys, signers);
    const heBytes = bytesOf(encode(heKeys, 0));
    const plainBytes = bytesOf(encode(plainKeys, 0));
    const sum = (keys: LaneKeyset, list: readonly VerifiedUpdate[]) => {
      const builder = new AggregateBuilder(keys.ctx);
      for (const u of list) builder.add(u);
      return builder.finish();
    };
    const heSumMs = timeIt(() => sum(heKeys, heUpdates), 2000);
    const plainSumMs = timeIt(() => sum(plainKeys, plainUpdates), 2000);
    const plainSum = sum(plainKeys, plainUpdates);
    const decodeSumMs = timeIt(
      () =>
        decodeAggregate(
          plainKeys,
          {
            encoding: plainSum.encoding,
            totalParams: plainSum.totalParams,
            sites: plainSum.sites,
            contributors: plainSum.contributors,
            totalWeight: plainSum.totalWeight,
            ciphertexts: plainSum.ciphertexts,
          },
          mac,
        ),
      1000,
    );
    const readBackMs = timeIt(() => {
      for (const u of plainUpdates) plainUpdateDelta(plainKeys, u, d);
    }, 1000);
    const deltas = plainUpdates.map((u) => ({
      site: u.signer,
      delta: plainUpdateDelta(plainKeys, u, d),
    }));
    const rules: [string, RobustRule][] = [
      ['coordinate-wise median', { name: 'median' }],
      ['trimmed mean (20% per side)', { name: 'trimmed-mean', trimFraction: 0.2 }],
      ['Multi-Krum (f = 2)', { name: 'multi-krum', byzantine: 2 }],
      ['mean with a norm bound', { name: 'mean', normBound: 0.5 }],
    ];
    const meanMs = timeIt(() => applyRobustRule(deltas, { name: 'mean' }), 1000);
    const ruleMs = rules.map(
      ([label, rule]) => [label, timeIt(() => applyRobustRule(deltas, rule), 1000)] as const,
    );
    const floorMean = { metric: 'the unweighted mean', value: meanMs };
    const rows: BenchRow[] = [
      {
        section: 'site',
        metric: 'encode one 2NN update, plain (quantize, pack, u64 payloads, sign)',
        value: plainEncodeMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'the he encode (CKKS)', value: heEncodeMs },
      },
      {
        section: 'wire',
        metric: 'update size, plain',
        value: plainBytes / 1e6,
        unit: 'MB',
        compare: '',
        floor: { metric: 'the he update', value: heBytes / 1e6 },
      },
      {
        section: 'aggregator',
        metric: `sum ${SITES} verified updates, plain integers`,
        value: plainSumMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'the CKKS sum', value: heSumMs },
      },
      {
        section: 'coordinator',
        metric: `decode ${SITES} stored updates one by one (robust rule inputs)`,
        value: readBackMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'decoding their sum once', value: decodeSumMs },
      },
      ...ruleMs.map(
        ([label, ms]): BenchRow => ({
          section: 'coordinator',
          metric: `${label} of ${SITES} updates`,
          value: ms,
          unit: 'ms',
          compare: '',
          floor: floorMean,
        }),
      ),
      {
        section: 'coordinator',
        metric: `unweighted mean of ${SITES} updates`,
        value: meanMs,
        unit: 'ms',
        compare: '',
        detail: true,
      },
    ];
    printTable(
      `plain mode beside he mode, and the robust rules beside the mean (${SITES} 2NN updates, same run)`,
      rows,
    );
    const path = writeResults('plain', rows, { parameters: d, sites: SITES, bits: OPTIONS.bits });
    console.log(`\nwrote ${path}`);
  } finally {
    mac.key.delete();
    heKeys.delete();
  }
}
