// Federated evaluation rides in the update: each site's counts split into bits-wide digits, summed
// under CKKS like any lane, carried after decryption. The sum must be exactly the plain sum.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BlockVerifier,
  DEFAULT_CODEC_OPTIONS,
  decodeAggregate,
  decodeEvaluation,
  type Evaluation,
  emptyEvaluation,
  encodeUpdate,
  evaluationFieldCount,
  evaluationLaneCount,
  evaluationLevels,
  MAX_CONFUSION_CLASSES,
  sumEvaluations,
  sumUpdates,
  type VerifiedUpdate,
} from '../../src/protocol/index.ts';
import { type CodecFixture, codecFixture, randomUpdate } from '../helpers/codec-fixture.ts';

/** A consistent evaluation of `classes` classes from a confusion matrix. */
function fromConfusion(classes: number, confusion: number[], lossSum: number): Evaluation {
  let correct = 0;
  for (let c = 0; c < classes; c++) correct += confusion[c * classes + c]!;
  return {
    examples: confusion.reduce((a, b) => a + b, 0),
    correct,
    lossSum,
    classes,
    confusion,
  };
}

/** Lane sums of plain level vectors (what CKKS adds, exactly). */
function laneSums(levels: readonly Uint8Array[]): Float64Array {
  const out = new Float64Array(levels[0]!.length);
  for (const l of levels) {
    for (let i = 0; i < l.length; i++) out[i]! += l[i]!;
  }
  return out;
}

// Hand-computed: site A saw 3 rows (2 right), site B 2 rows (1 right), 2 classes.
const A = fromConfusion(2, [1, 0, 1, 1], 1.5);
const B = fromConfusion(2, [0, 1, 0, 1], 0.25);

describe('evaluation lanes', () => {
  it('size: 3 fields plus the confusion cells, 48 bits each in bits-wide digits', () => {
    expect(evaluationFieldCount(10)).toBe(103);
    expect(evaluationLaneCount(10, 8)).toBe(103 * 6);
    expect(evaluationLaneCount(2, 1)).toBe(7 * 48);
    // Many classes: no confusion matrix (votes stay small).
    expect(evaluationFieldCount(MAX_CONFUSION_CLASSES + 1)).toBe(3);
  });

  it('digits are least significant first and stay below 2^bits', () => {
    const levels = evaluationLevels(fromConfusion(2, [300, 0, 0, 0], 0), 8);
    // examples = 300 = 44 + 1·256
    expect(Array.from(levels.subarray(0, 6))).toEqual([44, 1, 0, 0, 0, 0]);
    expect(Math.max(...evaluationLevels(A, 2))).toBeLessThan(4);
  });

  it('the summed lanes decode to the plain totals (hand-computed)', () => {
    const total = decodeEvaluation(laneSums([evaluationLevels(A, 8), evaluationLevels(B, 8)]), 2, 8);
    expect(total).toEqual({ examples: 5, correct: 3, lossSum: 1.75, classes: 2, confusion: [1, 1, 1, 2] });
    expect(sumEvaluations([A, B])).toEqual(total);
  });

  it('any sites, any bits: decode(Σ lanes) = Σ evaluations', () => {
    const site = (classes: number) =>
      fc
        .tuple(
          fc.array(fc.integer({ min: 0, max: 50_000 }), {
            minLength: classes * classes,
            maxLength: classes * classes,
          }),
          fc.double({ min: 0, max: 1e5, noNaN: true }),
        )
        .map(([confusion, loss]) => fromConfusion(classes, confusion, loss));
    fc.assert(
      fc.property(
        fc
          .integer({ min: 2, max: 5 })
          .chain((classes) =>
            fc.tuple(
              fc.constant(classes),
              fc.constantFrom(1, 2, 4, 8),
              fc.array(site(classes), { minLength: 1, maxLength: 6 }),
            ),
          ),
        ([classes, bits, sites]) => {
          const sums = laneSums(sites.map((s) => evaluationLevels(s, bits)));
          expect(decodeEvaluation(sums, classes, bits)).toEqual(sumEvaluations(sites));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('totals that cannot be anyone’s decode to null; bad own figures are refused by name', () => {
    // A confusion matrix not summing to the examples.
    const lying = evaluationLevels(A, 8);
    lying[0] = 9;
    expect(decodeEvaluation(laneSums([lying, evaluationLevels(B, 8)]), 2, 8)).toBeNull();
    expect(() => evaluationLevels({ ...A, correct: 3 }, 8)).toThrow(/diagonal sums to 2, correct is 3/);
    expect(() => evaluationLevels({ ...A, examples: -1 }, 8)).toThrow(/examples -1/);
    expect(() => evaluationLevels({ ...A, lossSum: Number.NaN }, 8)).toThrow(/lossSum NaN/);
    expect(() => evaluationLevels({ ...A, confusion: [1, 0, 1] }, 8)).toThrow(/3 cells, 2 classes need 4/);
    expect(() => decodeEvaluation(new Float64Array(5), 2, 8)).toThrow(/need 42/);
    expect(decodeEvaluation(laneSums([evaluationLevels(emptyEvaluation(3), 4)]), 3, 4)).toEqual(
      emptyEvaluation(3),
    );
  });

  describe('through CKKS, after the model lanes', () => {
    let fx: CodecFixture;
    const sites = [A, B, fromConfusion(2, [7, 2, 3, 11], 12.125)];
    const updates: VerifiedUpdate[] = [];
    const params = 3000;

    beforeAll(async () => {
      fx = await codecFixture(3);
      for (let s = 0; s < 3; s++) {
        const extraLevels = evaluationLevels(sites[s]!, DEFAULT_CODEC_OPTIONS.bits);
        const encoded = encodeUpdate({
          update: randomUpdate(params, 5 + s, 0.03),
          residual: null,
          credentials: fx.sites[s]!,
          context: fx.context,
          options: DEFAULT_CODEC_OPTIONS,
          exampleWeight: 10,
          extraLevels,
        });
        expect(encoded.residual.length).toBe(params);
        const verifier = new BlockVerifier({
          context: fx.context,
          ckksParamsId: fx.ctx.paramsId,
          keys: (signer) => fx.signers.get(signer),
          allowedAlgorithms: ['falcon-512'],
          pinned: { totalParams: params + extraLevels.length },
        });
        updates.push(verifier.verifyUpdate(encoded));
      }
    });

    it('the decrypted tail decodes to the three sites’ totals, and only those', () => {
      const bits = DEFAULT_CODEC_OPTIONS.bits;
      const decoded = decodeAggregate(fx.keyset, sumUpdates(fx.ctx, updates), fx.mac());
      expect(decoded.laneSums.length).toBe(params + evaluationLaneCount(2, bits));
      const totals = decodeEvaluation(decoded.laneSums.subarray(params), 2, bits);
      expect(totals).toEqual(sumEvaluations(sites));
      expect(totals).toMatchObject({ examples: 3 + 2 + 23, correct: 2 + 1 + 18 });
    });

    it('refuses extra levels beyond the lane width', () => {
      expect(() =>
        encodeUpdate({
          update: randomUpdate(10, 1, 0.03),
          residual: null,
          credentials: fx.sites[0]!,
          context: fx.context,
          options: { ...DEFAULT_CODEC_OPTIONS, bits: 4 },
          exampleWeight: 1,
          extraLevels: Uint8Array.of(3, 16),
        }),
      ).toThrow(/extraLevels\[1\] is 16, 4-bit lanes hold at most 15/);
    });
  });
});
