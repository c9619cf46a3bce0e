// Federated statistics: the sites' exact fixed-point sums add lane by lane, and the means and
// deviations from the federation's totals are the ones of the pooled rows (to the fixed point).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Dataset } from '../../gpu/index.ts';
import { fitStandardizer } from '../../src/data/index.ts';
import {
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  decodeStatistics,
  decodeStatisticsParams,
  encodeStatisticsParams,
  encodeUpdate,
  featureTotals,
  STATISTICS_FRACTION_BITS,
  standardizerFromTotals,
  statisticsLaneCount,
  statisticsLevels,
  sumFeatureTotals,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture } from '../helpers/codec-fixture.ts';

function rows(values: number[][]): Dataset {
  const d = values[0]!.length;
  return {
    features: Float32Array.from(values.flat()),
    labels: new Uint8Array(values.length),
    count: values.length,
    featureCount: d,
    classCount: 2,
  };
}

function laneSums(levels: readonly Uint8Array[]): Float64Array {
  const out = new Float64Array(levels[0]!.length);
  for (const l of levels) {
    for (let i = 0; i < l.length; i++) out[i]! += l[i]!;
  }
  return out;
}

// Hand-computed: pooled rows (1, −2), (3, −2), (−0.5, −2): means 7/6 and −2, deviations
// √(Σx²/n − mean²) = √((1 + 9 + 0.25)/3 − 49/36) = √(2.05556) and 0 (constant → 1).
const SITE_A = rows([
  [1, -2],
  [3, -2],
]);
const SITE_B = rows([[-0.5, -2]]);

describe('statistics lanes', () => {
  it('fixed-point sums of a site, split into positive, negative and squares', () => {
    const s = 2 ** STATISTICS_FRACTION_BITS;
    const t = featureTotals(SITE_A);
    expect(t.rows).toBe(2n);
    expect(t.positive).toEqual([BigInt(4 * s), 0n]);
    expect(t.negative).toEqual([0n, BigInt(4 * s)]);
    expect(t.squares).toEqual([BigInt(10 * s * s), BigInt(8 * s * s)]);
  });

  it('the summed lanes give the pooled means and deviations (hand-computed)', () => {
    const bits = 8;
    const totals = decodeStatistics(
      laneSums([
        statisticsLevels(featureTotals(SITE_A), bits),
        statisticsLevels(featureTotals(SITE_B), bits),
      ]),
      2,
      bits,
    );
    expect(totals).toEqual(sumFeatureTotals([featureTotals(SITE_A), featureTotals(SITE_B)]));
    const { mean, std } = standardizerFromTotals(totals!);
    expect(mean[0]).toBeCloseTo(7 / 6, 12);
    expect(mean[1]).toBe(-2);
    expect(std[0]).toBeCloseTo(Math.sqrt(10.25 / 3 - 49 / 36), 12);
    expect(std[1]).toBe(1);
  });

  it('any split of any rows: lanes sum exactly, and the standardizer matches the pooled fit', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 4 })
          .chain((d) =>
            fc.tuple(
              fc.array(
                fc.array(fc.double({ min: -1000, max: 1000, noNaN: true }), { minLength: d, maxLength: d }),
                { minLength: 2, maxLength: 30 },
              ),
              fc.integer({ min: 1, max: 29 }),
              fc.constantFrom(1, 2, 4, 8),
            ),
          ),
        ([values, cut, bits]) => {
          const at = Math.min(cut, values.length - 1);
          const parts = [rows(values.slice(0, at)), rows(values.slice(at))];
          const d = values[0]!.length;
          const sums = laneSums(parts.map((p) => statisticsLevels(featureTotals(p), bits)));
          expect(sums.length).toBe(statisticsLaneCount(d, bits));
          const totals = decodeStatistics(sums, d, bits)!;
          expect(totals).toEqual(featureTotals(rows(values)));
          const fitted = fitStandardizer(rows(values));
          const ours = standardizerFromTotals(totals);
          const unit = 2 ** -STATISTICS_FRACTION_BITS;
          for (let j = 0; j < d; j++) {
            expect(Math.abs(ours.mean[j]! - fitted.mean[j]!)).toBeLessThanOrEqual(unit);
            if (fitted.std[j]! > 0.01) {
              expect(Math.abs(ours.std[j]! - fitted.std[j]!)).toBeLessThanOrEqual(
                4 * unit + 1e-9 * fitted.std[j]!,
              );
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('params round-trip, and only statistics params decode', () => {
    const totals = sumFeatureTotals([featureTotals(SITE_A), featureTotals(SITE_B)]);
    const params = encodeStatisticsParams(totals);
    expect(decodeStatisticsParams(params)).toEqual(totals);
    expect(() => decodeStatisticsParams(params.subarray(0, params.length - 1))).toThrow(/end inside/);
    expect(() => decodeStatisticsParams(new Uint8Array(12))).toThrow(/not statistics params/);
  });

  it('refuses values it cannot carry exactly, naming the row and feature', () => {
    expect(() => featureTotals(rows([[1, Number.POSITIVE_INFINITY]]))).toThrow(/row 0 feature 1 is Infinity/);
    expect(() => featureTotals(rows([[2 ** 45]]))).toThrow(/row 0 feature 0/);
    // A sum whose squares cannot hold its values is no one's data.
    const lie = statisticsLevels({ rows: 1n, positive: [10n], negative: [0n], squares: [1n] }, 8);
    expect(decodeStatistics(laneSums([lie]), 1, 8)).toBeNull();
  });

  describe('through CKKS, as a statistics round update (no model lanes)', () => {
    let fx: CodecFixture;
    const updates: VerifiedUpdate[] = [];
    const sites = [SITE_A, SITE_B, rows([[0.25, -2]])];

    beforeAll(async () => {
      fx = await codecFixture(3);
      const bits = DEFAULT_CODEC_OPTIONS.bits;
      for (let s = 0; s < 3; s++) {
        const extraLevels = statisticsLevels(featureTotals(sites[s]!), bits);
        const encoded = encodeUpdate({
          update: new Float32Array(0),
          residual: null,
          credentials: fx.sites[s]!,
          context: fx.context,
          options: DEFAULT_CODEC_OPTIONS,
          exampleWeight: sites[s]!.count,
          extraLevels,
        });
        const verifier = new BlockVerifier({
          context: fx.context,
          ckksParamsId: fx.ctx.paramsId,
          keys: (signer) => fx.signers.get(signer),
          allowedAlgorithms: ['falcon-512'],
          pinned: { totalParams: extraLevels.length },
        });
        updates.push(verifier.verifyUpdate(encoded));
      }
    });

    it('decrypts to the pooled totals', () => {
      const decoded = decodeAggregate(fx.keyset, sumUpdates(fx.ctx, updates), fx.mac());
      const totals = decodeStatistics(decoded.laneSums, 2, DEFAULT_CODEC_OPTIONS.bits);
      expect(totals).toEqual(sumFeatureTotals(sites.map(featureTotals)));
    });
  });
});
