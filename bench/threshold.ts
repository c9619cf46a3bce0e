// `npm run bench -- threshold`: what threshold CKKS costs beside today's shared-key CKKS, in one
// run on one machine (issue 23).
//
// One MNIST 2NN update (199,210 parameters, Gaussian values of RMS 3e-3), the real codec and
// Falcon-512, under the shared key (N = 8192, moduli [60, 40, 60], seeded ciphertexts at the last
// level) and under threshold CKKS (N = 8192, moduli [60, 60, 60], c0 at two limbs, the position's
// common random polynomial never sent):
//   wire        uplink bytes per parameter at 8 and 2 bits (blocks and manifest)
//   site        encoding one update (quantize, pack, encrypt, sign)
//   aggregator  adding one block payload into a sum
//   decryption  one site's decryption shares for a whole aggregate, combining t shares and
//               decoding, and the traffic the shares add to a round, at n = 4, 16 and 64 sites
//               (t = ⌈2n/3⌉, shares packed like payloads), beside the shared-key decryption of
//               the same aggregate
//   keys        one site's key generation and dealing to n = 10 and 100 sites, beside creating
//               the shared key; a re-sharing (enrollment, revocation, rotation) is a new dealing:
//               one site's whole deal (its secret, signed public share and n shares sealed to
//               the sites' ML-KEM keys, `makeDeal`) and the bytes one re-sharing moves (n deals);
//               with a decryption committee of K = 16 holders at n = 100 and 1,000 sites: a
//               holder's deal and another site's, the bytes one re-sharing moves and the most one
//               site downloads, beside the all-to-all dealing at the same n (computed from one
//               deal's size where running it would take hours)
//   round       the he round with the real services, 4 site processes and 2 aggregators (the round
//               bench's federation, bench/round-he-plain.ts), under threshold keys beside the
//               shared key, mean of rounds 2..R (COHORT_BENCH_ROUNDS, default 4; rows shared by the
//               sites: COHORT_BENCH_TRAIN_LIMIT, default 60,000; COHORT_BENCH_THRESHOLD_ROUND=0 skips it)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../crypto/ckks/index.ts';
import { generateKemKeyPair } from '../crypto/kem/index.ts';
import type { LaneContext, LaneKeyset } from '../crypto/lanes/index.ts';
import { AggregateMacKey } from '../crypto/mac/index.ts';
import { generateSigningKeyPair } from '../crypto/signature/index.ts';
import {
  addInto,
  combineShares,
  commonRandomPoly,
  DEFAULT_THRESHOLD_PARAMS,
  decryptionShare,
  defaultThreshold,
  getThresholdContext,
  packedBytes,
  randomPoly,
  roundDecryptionKey,
  SiteSecret,
  ThresholdLaneContext,
  ThresholdLaneKeyset,
  wipe,
  zeroPoly,
} from '../crypto/threshold/index.ts';
import { MNIST_2NN, parameterCount } from '../federation/index.ts';
import { encodeUpdate, type RoundContext } from '../src/protocol/index.ts';
import { createLocalDeployment, type LocalDeployment } from '../src/services/index.ts';
import { makeDeal } from '../src/services/threshold-dealing.ts';
import { type HeResult, runHeArm } from './round-he-plain.ts';
import { gaussianUpdate } from './synthetic-update.ts';
import { type BenchRow, printTable, timeIt, writeResults } from './table.ts';

const SITE_COUNTS = [4, 16, 64];
const env = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const ROUNDS = Math.max(2, env('COHORT_BENCH_ROUNDS', 4));
const TRAIN_LIMIT = env('COHORT_BENCH_TRAIN_LIMIT', 60_000);
const say = (s: string) => process.stderr.write(`[threshold bench] ${s}\n`);

/** `ROUNDS` he rounds of the round bench's federation under `keys`. */
async function heRounds(keys: 'shared' | 'threshold'): Promise<HeResult> {
  const dir = mkdtempSync(join(tmpdir(), `cohort-threshold-bench-${keys}-`));
  let dep: LocalDeployment | undefined;
  try {
    dep = await createLocalDeployment({
      dir,
      federation: 'bench',
      aggregators: 2,
      sites: 4,
      overrides: {
        round: { deadlineMs: 300_000, voteTimeoutMs: 300_000, heartbeatMs: 200, missedHeartbeats: 50 },
        learning: { trainLimit: TRAIN_LIMIT, testLimit: 200 },
        codec: { clip: 0.02 },
        crypto: { keys },
        log: { level: 'error' },
      },
    });
    say(`${keys} keys: ${ROUNDS} he rounds, sites as processes…`);
    return await runHeArm(dep, ROUNDS);
  } finally {
    await dep?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const steadyMean = (xs: readonly number[]) => {
  const s = xs.slice(1);
  return s.reduce((a, b) => a + b, 0) / s.length;
};
const DEALING_COUNTS = [10, 100];
/** Sites of the committee benches, and the committee's size. */
const COMMITTEE_COUNTS = [100, 1000];
const COMMITTEE = 16;

export async function runThresholdBench(): Promise<void> {
  const d = parameterCount(MNIST_2NN);
  const update = gaussianUpdate(d, 3e-3);
  const ckks = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const shared = CkksKeyset.create(ckks);
  const tc = await getThresholdContext(DEFAULT_THRESHOLD_PARAMS);
  const lanes = new ThresholdLaneContext(tc);
  const epoch = new Uint8Array(32).fill(1);
  const own = new ThresholdLaneKeyset(lanes, SiteSecret.generate(tc), epoch);
  const signing = generateSigningKeyPair('falcon-512');
  const macKey = AggregateMacKey.random();
  const context: RoundContext = { federation: 'bench', round: 1, version: 0, baseCommit: new Uint8Array(32) };
  let attempt = 0;
  const encode = (keyset: LaneKeyset, bits: 2 | 8) => {
    // A new attempt per encoding: threshold encryption never reuses a position.
    const nonce = { federation: 'bench', round: 1, attempt: Uint8Array.of(attempt >> 8, attempt++ & 255) };
    return encodeUpdate({
      update,
      residual: null,
      credentials: { signer: 'site-1', ckks: keyset, signing, mac: { key: macKey, nonce } },
      context,
      options: { bits, clip: 0.02, maxContributors: 32, crcChunkBytes: 16_384 },
      exampleWeight: 600,
    });
  };
  // The block payloads of one encoding, as the keyset produced them (the blocks are framed).
  const payloads = (keyset: LaneKeyset, bits: 2 | 8): Uint8Array[] => {
    const out: Uint8Array[] = [];
    const recorder: LaneKeyset = {
      ctx: keyset.ctx,
      encrypt: (values, position) => {
        const c = keyset.encrypt(values, position);
        out.push(c);
        return c;
      },
      decrypt: (payload, block) => keyset.decrypt(payload, block),
      delete: () => {},
    };
    encode(recorder, bits);
    return out;
  };
  const bytesOf = (e: { manifest: Uint8Array; blocks: Uint8Array[] }) =>
    e.manifest.length + e.blocks.reduce((a, b) => a + b.length, 0);
  const addMs = (ctx: LaneContext, payload: Uint8Array) => {
    const acc = ctx.loadCiphertext(payload);
    const ms = timeIt(() => {
      const v = ctx.loadCiphertext(payload);
      ctx.addInPlace(acc, v);
      v.delete();
    }, 300);
    acc.delete();
    return ms;
  };

  try {
    const rows: BenchRow[] = [];
    const blocksAt8 = payloads(own, 8).length;
    for (const bits of [8, 2] as const) {
      const thresholdBytes = bytesOf(encode(own, bits)) / d;
      const sharedBytes = bytesOf(encode(shared, bits)) / d;
      rows.push({
        section: 'wire',
        metric: `uplink, ${bits}-bit update, threshold CKKS`,
        value: thresholdBytes,
        unit: 'B/param',
        compare: '≤ 2× the shared key',
        pass: thresholdBytes <= 2 * sharedBytes,
        floor: { metric: 'the shared key', value: sharedBytes },
      });
    }
    const thresholdEncodeMs = timeIt(() => encode(own, 8), 2000);
    const sharedEncodeMs = timeIt(() => encode(shared, 8), 2000);
    rows.push({
      section: 'site',
      metric: 'encode one 8-bit 2NN update (quantize, pack, encrypt, sign), threshold',
      value: thresholdEncodeMs,
      unit: 'ms',
      compare: '',
      floor: { metric: 'the shared key', value: sharedEncodeMs },
    });
    const thresholdPayload = payloads(own, 8)[0]!;
    const sharedPayload = payloads(shared, 8)[0]!;
    rows.push({
      section: 'aggregator',
      metric: 'load and add one block payload, threshold',
      value: addMs(lanes, thresholdPayload),
      unit: 'ms',
      compare: '',
      floor: { metric: 'the shared key (SEAL load + add)', value: addMs(ckks, sharedPayload) },
    });

    // Decryption of a whole 8-bit aggregate (blocksAt8 blocks).
    const sharedSum = payloads(shared, 8);
    const sharedDecryptMs = timeIt(() => {
      for (const c of sharedSum) shared.decrypt(c);
    }, 1000);
    const aggregate = Array.from({ length: blocksAt8 }, () => randomPoly(tc));
    for (const n of SITE_COUNTS) {
      const t = defaultThreshold(n, 2);
      const decrypting = Array.from({ length: t }, (_, k) => k + 1);
      // A site's held shares of n secrets: what it sums into its round key.
      const held = Array.from({ length: n }, () => randomPoly(tc));
      const crps = Array.from({ length: blocksAt8 }, (_, b) => commonRandomPoly(tc, epoch, `round:${n}`, b));
      let shares: ReturnType<typeof decryptionShare>[] = [];
      const shareMs = timeIt(() => {
        const sum = zeroPoly(tc);
        for (const h of held) addInto(tc, sum, h);
        const key = roundDecryptionKey(tc, sum, decrypting, 1);
        shares = crps.map((crp) => decryptionShare(tc, key, crp));
      }, 1000);
      const combineMs = timeIt(() => {
        for (let b = 0; b < blocksAt8; b++)
          combineShares(
            tc,
            aggregate[b]!,
            decrypting.map(() => shares[b]!),
          );
      }, 1000);
      const addedMB = (t * blocksAt8 * packedBytes(tc)) / 1e6;
      rows.push(
        {
          section: 'decryption',
          metric: `n = ${n}: one site's shares for the whole aggregate (${blocksAt8} blocks, t = ${t})`,
          value: shareMs,
          unit: 'ms',
          compare: '',
          floor: { metric: 'shared-key decryption of the aggregate', value: sharedDecryptMs },
        },
        {
          section: 'decryption',
          metric: `n = ${n}: combine ${t} shares and decode the aggregate`,
          value: combineMs,
          unit: 'ms',
          compare: '',
          floor: { metric: 'shared-key decryption of the aggregate', value: sharedDecryptMs },
        },
        {
          section: 'decryption',
          metric: `n = ${n}: shares added to the round's traffic (${t} sites × ${blocksAt8} blocks)`,
          value: addedMB,
          unit: 'MB',
          compare: '',
          floor: {
            metric: `the round's uplink (${n} 8-bit updates)`,
            value: (n * blocksAt8 * packedBytes(tc)) / 1e6,
          },
        },
      );
    }

    const sharedKeygenMs = timeIt(() => CkksKeyset.create(ckks).delete(), 500);
    for (const n of DEALING_COUNTS) {
      const t = defaultThreshold(n, 2);
      const points = Array.from({ length: n }, (_, k) => k + 1);
      const dealMs = timeIt(
        () => {
          const s = SiteSecret.generate(tc);
          s.deal(t, points);
          s.wipe();
        },
        n > 50 ? 0 : 1000,
        n > 50 ? 1 : 3,
      );
      rows.push({
        section: 'keys',
        metric: `n = ${n}: one site generates its secret and deals ${n} shares (t = ${t})`,
        value: dealMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'creating the shared key', value: sharedKeygenMs },
      });
    }
    const dealer = generateSigningKeyPair('falcon-512');
    for (const n of DEALING_COUNTS) {
      const roster = {
        federation: 'bench',
        paramsId: tc.paramsId,
        threshold: defaultThreshold(n, 2),
        generation: 1,
        sites: Array.from({ length: n }, (_, k) => ({ id: `site-${k + 1}`, point: k + 1 })),
      };
      const kem = Array.from({ length: n }, () => generateKemKeyPair().publicKey);
      let dealBytes = 0;
      const dealMs = timeIt(
        () => {
          const d = makeDeal({
            site: 'site-1',
            roster,
            ctx: tc,
            signingKey: dealer,
            kemKeys: (id) => kem[Number(id.slice(5)) - 1],
          });
          dealBytes = d.publicShare.length + d.envelopes.reduce((a, e) => a + e.envelope.length, 0);
          wipe(d.secret);
        },
        n > 50 ? 0 : 1000,
        n > 50 ? 1 : 3,
      );
      rows.push(
        {
          section: 'keys',
          metric: `n = ${n}: re-sharing, one site's whole deal (secret, public share, ${n} sealed shares)`,
          value: dealMs,
          unit: 'ms',
          compare: '',
          floor: { metric: 'creating the shared key', value: sharedKeygenMs },
        },
        {
          section: 'keys',
          metric: `n = ${n}: re-sharing, bytes moved (${n} deals of ${(dealBytes / 1e6).toFixed(2)} MB)`,
          value: (n * dealBytes) / 1e6,
          unit: 'MB',
          compare: '',
          floor: {
            metric: `the round's uplink (${n} 8-bit updates)`,
            value: (n * blocksAt8 * packedBytes(tc)) / 1e6,
          },
        },
      );
    }
    // A decryption committee: K holders, every site deals to them, each holder seals its data
    // contribution to every site. One holder's deal and one other site's are made for real.
    for (const n of COMMITTEE_COUNTS) {
      const ids = Array.from({ length: n }, (_, k) => `site-${k + 1}`);
      const holders = ids.slice(0, COMMITTEE);
      const roster = {
        federation: 'bench',
        paramsId: tc.paramsId,
        threshold: defaultThreshold(COMMITTEE, 2),
        generation: 1,
        sites: ids.map((id, k) => ({ id, point: k + 1 })),
        holders,
      };
      const kem = Array.from({ length: n }, () => generateKemKeyPair().publicKey);
      const deal = (site: string) => {
        let bytes = 0;
        let envelopes = 0;
        let certBytes = 0;
        const ms = timeIt(
          () => {
            const d = makeDeal({
              site,
              roster,
              ctx: tc,
              signingKey: dealer,
              kemKeys: (id) => kem[Number(id.slice(5)) - 1],
            });
            bytes = d.publicShare.length + d.envelopes.reduce((a, e) => a + e.envelope.length, 0);
            envelopes = d.envelopes.length;
            certBytes = d.publicShare.length - packedBytes(tc);
            wipe(d.secret);
          },
          0,
          1,
        );
        return { ms, bytes, envelopes, certBytes };
      };
      const holder = deal(ids[0]!);
      const other = deal(ids[n - 1]!);
      // Each envelope to a holder carries a share; from a holder to another site, 32 bytes.
      const shareEnvelope = (other.bytes - packedBytes(tc) - other.certBytes) / other.envelopes;
      const smallEnvelope =
        (holder.bytes - packedBytes(tc) - holder.certBytes - COMMITTEE * shareEnvelope) / (n - COMMITTEE);
      const moved = COMMITTEE * holder.bytes + (n - COMMITTEE) * other.bytes;
      // All-to-all at the same n: every site deals n share envelopes.
      const allToAll = n * (n * shareEnvelope + packedBytes(tc) + other.certBytes);
      const holderDownload = n * (shareEnvelope + holder.certBytes);
      const otherDownload = COMMITTEE * smallEnvelope + n * holder.certBytes;
      rows.push(
        {
          section: 'keys',
          metric: `n = ${n}, ${COMMITTEE} holders: a holder's whole deal (${COMMITTEE} shares, ${n - COMMITTEE} contributions)`,
          value: holder.ms,
          unit: 'ms',
          compare: '',
          floor: { metric: 'creating the shared key', value: sharedKeygenMs },
        },
        {
          section: 'keys',
          metric: `n = ${n}, ${COMMITTEE} holders: another site's whole deal (${COMMITTEE} shares)`,
          value: other.ms,
          unit: 'ms',
          compare: '',
          floor: { metric: 'creating the shared key', value: sharedKeygenMs },
        },
        {
          section: 'keys',
          metric: `n = ${n}, ${COMMITTEE} holders: re-sharing, bytes moved`,
          value: moved / 1e6,
          unit: 'MB',
          compare: '',
          floor: { metric: `all-to-all dealing at n = ${n}`, value: allToAll / 1e6 },
        },
        {
          section: 'keys',
          metric: `n = ${n}, ${COMMITTEE} holders: re-sharing, the most one site downloads (a holder: ${n} envelopes and certificates; another site: ${(otherDownload / 1e3).toFixed(0)} kB)`,
          value: holderDownload / 1e6,
          unit: 'MB',
          compare: '',
          floor: {
            metric: `the round's uplink of one site (an 8-bit update)`,
            value: (blocksAt8 * packedBytes(tc)) / 1e6,
          },
        },
      );
    }
    const rounds: Record<string, HeResult> = {};
    if (process.env.COHORT_BENCH_THRESHOLD_ROUND !== '0') {
      for (const keys of ['shared', 'threshold'] as const) rounds[keys] = await heRounds(keys);
      const shared = rounds.shared!;
      const threshold = rounds.threshold!;
      const floor = {
        metric: `shared-key he round, mean r2..r${ROUNDS}`,
        value: steadyMean(shared.durations),
      };
      rows.push(
        {
          section: 'round',
          metric: `threshold he round, mean r2..r${ROUNDS} (4 site processes, 2 aggs, 2NN, ${TRAIN_LIMIT.toLocaleString('en-US')} rows; ${threshold.committed} commit / ${threshold.aborted} abort)`,
          value: steadyMean(threshold.durations),
          unit: 'ms',
          floor,
          compare: '≤ 1.5× shared',
          pass: steadyMean(threshold.durations) / floor.value <= 1.5,
        },
        {
          section: 'round',
          metric: 'threshold: open → PREPARE (train, encrypt, upload, verify, sum, shares)',
          value: steadyMean(threshold.openToPrepareMs),
          unit: 'ms',
          floor: { metric: 'shared key: open → PREPARE', value: steadyMean(shared.openToPrepareMs) },
          compare: '',
          detail: true,
        },
        {
          section: 'round',
          metric: 'threshold: PREPARE → decision (fetch shares, combine, apply, vote, log)',
          value: steadyMean(threshold.prepareToDecisionMs),
          unit: 'ms',
          floor: { metric: 'shared key: PREPARE → decision', value: steadyMean(shared.prepareToDecisionMs) },
          compare: '',
          detail: true,
        },
        {
          section: 'round',
          metric: 'threshold: site upload per round (all sites)',
          value: steadyMean(threshold.uploadBytes) / 1e6,
          unit: 'MB',
          floor: { metric: 'shared key: site upload per round', value: steadyMean(shared.uploadBytes) / 1e6 },
          compare: '',
          detail: true,
        },
      );
    }
    printTable('Threshold CKKS beside the shared key (one 2NN update, same run)', rows);
    const path = writeResults('threshold', rows, {
      parameters: d,
      blocks: blocksAt8,
      threshold: DEFAULT_THRESHOLD_PARAMS,
      shared: DEFAULT_CKKS_PARAMS,
      round: {
        rounds: ROUNDS,
        trainLimit: TRAIN_LIMIT,
        durations: Object.fromEntries(Object.entries(rounds).map(([k, r]) => [k, r.durations])),
      },
    });
    console.log(`\nwrote ${path}`);
  } finally {
    shared.delete();
    own.delete();
  }
}
