// `npm run bench -- privacy`: what differential privacy costs a site and a decrypting site, beside
// the 8-bit error-feedback path of the same update in the same run (issue 12).
//
// One MNIST 2NN update (199,210 parameters, Gaussian values of RMS 3e-3, L2 norm ≈ 1.3), the real
// CKKS codec (N = 8192) and Falcon-512, DP as docs/privacy.md configures it: clip 0.05, noise
// multiplier 1.25, 10 contributors (ε 8 over 150 rounds at q = 0.1 in the experiment of docs/results.md).
//   site encode        `encodeUpdate`: quantize with error feedback, pack, encrypt, sign
//   site encode (DP)   `privateLevels` (clip, conditional rounding, Skellam share, digits) then
//                      `encodeUpdate` of those lanes: what `trainAndSend` does with privacy on
//   private levels     `privateLevels` alone (no CKKS)
//   decode             `privateMean` of 10 contributions' digit sums, beside `dequantizeSum`
//   accountant         calibrating the noise multiplier; one round's charge
import { CkksKeyset, DEFAULT_CKKS_PARAMS, getCkksContext } from '../crypto/ckks/index.ts';
import { AggregateMacKey } from '../crypto/mac/index.ts';
import { generateSigningKeyPair } from '../crypto/signature/index.ts';
import { dequantizeSum, MNIST_2NN, parameterCount } from '../federation/index.ts';
import {
  calibrateNoiseMultiplier,
  INTEGER_RDP_ORDERS,
  planSkellamDp,
  RdpLedger,
  skellamRoundCharge,
} from '../federation/privacy/index.ts';
import { encodeUpdate, type RoundContext } from '../src/protocol/index.ts';
import { privateLevels, privateMean } from '../src/services/agent/private-update.ts';
import { servicePrivacyOf } from '../src/services/privacy-plan.ts';
import { gaussianUpdate } from './synthetic-update.ts';
import { type BenchRow, printTable, timeIt, writeResults } from './table.ts';

const CONTRIBUTORS = 10;

export async function runPrivacyBench(): Promise<void> {
  const d = parameterCount(MNIST_2NN);
  const ctx = await getCkksContext(DEFAULT_CKKS_PARAMS);
  const keyset = CkksKeyset.create(ctx);
  const signing = generateSigningKeyPair('falcon-512');
  const update = gaussianUpdate(d, 3e-3);
  const plan = planSkellamDp({
    clipNorm: 0.05,
    noiseMultiplier: 1.25,
    expectedContributors: CONTRIBUTORS,
    dimension: d,
  });
  const privacy = servicePrivacyOf(plan, 8, 8, 1e-5);
  const { fieldBits } = privacy;
  const context: RoundContext = { federation: 'bench', round: 1, version: 0, baseCommit: new Uint8Array(32) };
  const framing = {
    credentials: {
      signer: 'site-1',
      ckks: keyset,
      signing,
      mac: {
        key: AggregateMacKey.random(),
        nonce: { federation: 'bench', round: 1, attempt: new Uint8Array(0) },
      },
    },
    context,
    options: { bits: 8 as const, clip: 0.02, maxContributors: 32, crcChunkBytes: 16_384 },
    exampleWeight: 600,
  };
  try {
    let efBytes = 0;
    let dpBytes = 0;
    const bytesOf = (e: { manifest: Uint8Array; blocks: Uint8Array[] }) =>
      e.manifest.length + e.blocks.reduce((a, b) => a + b.length, 0);
    const efMs = timeIt(() => {
      efBytes = bytesOf(encodeUpdate({ ...framing, update, residual: null }));
    }, 2000);
    const dpMs = timeIt(() => {
      const own = privateLevels(privacy, update, 8);
      dpBytes = bytesOf(
        encodeUpdate({ ...framing, update: new Float32Array(0), residual: null, extraLevels: own.levels }),
      );
    }, 2000);
    const levelsMs = timeIt(() => privateLevels(privacy, update, 8), 1000);
    const sums = new Float64Array(d * privacy.digits);
    for (let k = 0; k < CONTRIBUTORS; k++) {
      const own = privateLevels(privacy, gaussianUpdate(d, 3e-3), 8);
      for (let i = 0; i < own.levels.length; i++) sums[i]! += own.levels[i]!;
    }
    const levelSums = new Float64Array(d).fill(127 * CONTRIBUTORS);
    const dequantMs = timeIt(() => dequantizeSum(levelSums, CONTRIBUTORS, 8, 0.02), 500);
    const meanMs = timeIt(() => privateMean(privacy, sums, 8, CONTRIBUTORS), 500);
    const base = { clipNorm: 0.05, expectedContributors: 100, dimension: d };
    const calibrateMs = timeIt(
      () => calibrateNoiseMultiplier(base, { epsilon: 8, delta: 1e-5, rounds: 150, samplingRate: 0.1 }),
      1000,
    );
    const ledger = new RdpLedger({ delta: 1e-5, orders: INTEGER_RDP_ORDERS });
    const chargeMs = timeIt(() => ledger.charge(skellamRoundCharge(plan, CONTRIBUTORS, 1)), 500);
    const chargeSampledMs = timeIt(() => ledger.charge(skellamRoundCharge(plan, 100, 0.1)), 500);

    const rows: BenchRow[] = [
      {
        section: 'site',
        metric: 'encode one 2NN update, DP (clip, round, Skellam share, digits, CKKS, sign)',
        value: dpMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'the 8-bit error-feedback encode', value: efMs },
      },
      {
        section: 'site',
        metric: 'encode one 2NN update, 8-bit error feedback',
        value: efMs,
        unit: 'ms',
        compare: '',
        detail: true,
      },
      {
        section: 'site',
        metric: 'private levels alone (clip, conditional rounding, Skellam share, digits)',
        value: levelsMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'the 8-bit error-feedback encode', value: efMs },
      },
      {
        section: 'wire',
        metric: `update size, DP (${privacy.digits} lanes a parameter, field of ${fieldBits} bits)`,
        value: dpBytes / 1e6,
        unit: 'MB',
        compare: '',
        floor: { metric: 'the 8-bit update', value: efBytes / 1e6 },
      },
      {
        section: 'decode',
        metric: `mean of ${CONTRIBUTORS} private contributions from digit sums`,
        value: meanMs,
        unit: 'ms',
        compare: '',
        floor: { metric: 'dequantizing 8-bit level sums', value: dequantMs },
      },
      {
        section: 'accountant',
        metric: 'calibrate z for ε 8 over 150 rounds (q 0.1, Zhu–Wang Thm 5)',
        value: calibrateMs,
        unit: 'ms',
        compare: '',
      },
      {
        section: 'accountant',
        metric: 'charge one round, q = 1 (the services)',
        value: chargeMs,
        unit: 'ms',
        compare: '',
      },
      {
        section: 'accountant',
        metric: 'charge one round, q = 0.1 (amplified, 128 orders)',
        value: chargeSampledMs,
        unit: 'ms',
        compare: '',
      },
    ];
    printTable('Differential privacy beside the 8-bit error-feedback path (one 2NN update, same run)', rows);
    const path = writeResults('privacy', rows, {
      parameters: d,
      noiseMultiplier: 1.25,
      clipNorm: 0.05,
      contributors: CONTRIBUTORS,
      digits: privacy.digits,
      fieldBits,
      valueBound: plan.valueBound,
    });
    console.log(`\nwrote ${path}`);
  } finally {
    keyset.delete();
  }
}
