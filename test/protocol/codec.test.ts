import { beforeAll, describe, expect, it } from 'vitest';
import { CkksKeyset } from '../../crypto/ckks/index.ts';
import { type QuantBits, quantizationStep, sumErrorBound } from '../../federation/index.ts';
import {
  type CodecOptions,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  type EncodedUpdate,
  encodeUpdate,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';

const SITES = 8;
const PARAMS = 1_000_000;

describe('codec: eight sites, 1,000,000 parameters, encode → verify → sum → decode', () => {
  let fx: CodecFixture;
  const updates: Float32Array[] = [];
  const residuals: Float32Array[] = [];
  beforeAll(async () => {
    fx = await codecFixture(SITES);
    for (let s = 0; s < SITES; s++) {
      updates.push(randomUpdate(PARAMS, 1000 + s, 0.06));
      residuals.push(randomUpdate(PARAMS, 2000 + s, 0.002));
    }
  });

  for (const bits of [1, 2, 4, 8] as QuantBits[]) {
    it(`${bits}-bit: integer lane sums are exact; the float sum is within K·Δ, unbiased, RMS ≤ √K·Δ/2`, () => {
      const options: CodecOptions = { ...DEFAULT_CODEC_OPTIONS, bits, clip: 0.05 };
      const encoded: EncodedUpdate[] = fx.sites.map((credentials, s) =>
        encodeUpdate({
          update: updates[s]!,
          residual: residuals[s]!,
          credentials,
          context: fx.context,
          options,
          exampleWeight: 100 + s,
          roundingSeed: { key0: 77 + s, key1: bits },
        }),
      );
      const verifier = fx.verifier();
      const verified: VerifiedUpdate[] = encoded.map((e) => verifier.verifyUpdate(e));
      const aggregate = sumUpdates(fx.ctx, verified);
      expect(aggregate.contributors).toBe(SITES);
      expect(aggregate.totalWeight).toBe(SITES * 100 + 28);
      const decoded = decodeAggregate(fx.keyset, aggregate, fx.mac());

      // Integer sums: exactly what each site quantized, added in the clear.
      const expected = new Float64Array(PARAMS);
      for (const e of encoded) for (let i = 0; i < PARAMS; i++) expected[i]! += e.levels[i]!;
      let mismatches = 0;
      for (let i = 0; i < PARAMS; i++) if (decoded.laneSums[i] !== expected[i]) mismatches++;
      expect(mismatches).toBe(0);

      // Float sum against Σ clip(u + e) within the stated bound K·Δ (+ float slack).
      const bound = sumErrorBound(bits, options.clip, SITES);
      const clip = Math.fround(options.clip);
      let worst = 0;
      let errorSum = 0;
      let errorSquares = 0;
      for (let i = 0; i < PARAMS; i++) {
        let truth = 0;
        for (let s = 0; s < SITES; s++) {
          const u = Math.fround(updates[s]![i]! + residuals[s]![i]!);
          truth += Math.min(clip, Math.max(-clip, u));
        }
        const error = decoded.sum[i]! - truth;
        worst = Math.max(worst, Math.abs(error));
        errorSum += error;
        errorSquares += error * error;
      }
      expect(worst).toBeLessThanOrEqual(bound);
      // At 1 bit the worst case cannot fail (Δ = 2·clip: every decodable sum is within K·Δ of
      // every true one), so the rounding is checked as a distribution. Each site's stochastic
      // rounding error is unbiased with variance ≤ Δ²/4, independent across sites and parameters:
      // over 1,000,000 parameters the mean error lies within 6σ = 6·√K·(Δ/2)/√PARAMS of 0, and the
      // RMS error is at most √K·Δ/2 (its sampling noise is far below the 1% margin). Rounding
      // down, or a dequantization off by a level, biases the mean; sites sharing one rounding
      // stream add their errors coherently, ≈ K·Δ/√6 RMS.
      const step = quantizationStep(bits, options.clip);
      const sigma = Math.sqrt(SITES) * (step / 2);
      expect(Math.abs(errorSum / PARAMS)).toBeLessThanOrEqual((6 * sigma) / Math.sqrt(PARAMS));
      expect(Math.sqrt(errorSquares / PARAMS)).toBeLessThanOrEqual(sigma * 1.01);
      // Error feedback: what was lost to quantization and clipping is kept in the residual.
      const r = encoded[0]!.residual;
      const u0 = updates[0]!;
      const e0 = residuals[0]!;
      for (const i of [0, 1, 12_345, PARAMS - 1]) {
        expect(Math.abs(r[i]!)).toBeLessThanOrEqual(Math.abs(Math.fround(u0[i]! + e0[i]!)) + 2 * clip);
      }
    });
  }

  it('wire size: 8-bit ≤ 6 B and 2-bit ≤ 3 B per parameter', () => {
    for (const [bits, goal] of [
      [8, 6],
      [2, 3],
    ] as const) {
      const e = encodeUpdate({
        update: updates[0]!,
        residual: null,
        credentials: fx.sites[0]!,
        context: fx.context,
        options: { ...DEFAULT_CODEC_OPTIONS, bits },
        exampleWeight: 1,
      });
      const bytes = e.blocks.reduce((a, b) => a + b.length, 0) + e.manifest.length;
      expect(bytes / PARAMS).toBeLessThanOrEqual(goal);
    }
  });

  it('a keyset exported and imported decrypts the same aggregate', () => {
    const e = encodeUpdate({
      update: updates[1]!.subarray(0, 5000),
      residual: null,
      credentials: fx.sites[1]!,
      context: fx.context,
      options: DEFAULT_CODEC_OPTIONS,
      exampleWeight: 1,
      roundingSeed: { key0: 1, key1: 2 },
    });
    const v = fx.verifier();
    const agg = sumUpdates(fx.ctx, [v.verifyUpdate(e)]);
    const bytes = fx.keyset.exportSecretKey();
    const copy = CkksKeyset.import(fx.ctx, bytes);
    bytes.fill(0);
    try {
      expect(Array.from(decodeAggregate(copy, agg, fx.mac()).laneSums)).toEqual(Array.from(e.levels));
    } finally {
      copy.delete();
    }
  });
});
