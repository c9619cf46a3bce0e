import { InvalidArgumentError } from '../errors/index.ts';
import { carryIntegers, digitsPerField, splitIntegers } from './integer-lanes.ts';

/**
 * Federated evaluation rides in the round's update: after its quantized parameters, a site
 * appends its evaluation of the round's base model on its own validation rows as exact integers
 * in lanes (see `integer-lanes.ts`), so the decrypted sum gives the federation-wide totals and
 * never one site's figures.
 */

/** Bits of each evaluation field of one site (a count, a fixed-point loss sum, a confusion cell). */
export const EVALUATION_FIELD_BITS = 48;

/** A loss sum travels as round(lossSum · 2^16): 16 fractional bits. */
export const LOSS_FIXED_POINT = 2 ** 16;

/** Above this many classes the confusion matrix is not carried (it would make votes too large). */
export const MAX_CONFUSION_CLASSES = 32;

/** One site's evaluation of a model on its validation rows (or a federation's totals). */
export interface Evaluation {
  /** Validation rows evaluated. */
  readonly examples: number;
  /** Rows whose arg-max prediction equals the label. */
  readonly correct: number;
  /** Σ over rows of the cross-entropy (nats). */
  readonly lossSum: number;
  /** Number of classes C. */
  readonly classes: number;
  /**
   * Row-major C × C counts, [true class][predicted class]; empty when C exceeds
   * {@link MAX_CONFUSION_CLASSES}.
   */
  readonly confusion: readonly number[];
}

/** Evaluation fields of a model with `classes` classes: examples, correct, loss sum, confusion. */
export function evaluationFieldCount(classes: number): number {
  assertClasses(classes);
  return 3 + (classes <= MAX_CONFUSION_CLASSES ? classes * classes : 0);
}

/** Lanes the evaluation of a `classes`-class model takes at `bits` per lane. */
export function evaluationLaneCount(classes: number, bits: number): number {
  return evaluationFieldCount(classes) * digitsPerField(EVALUATION_FIELD_BITS, bits);
}

/**
 * The lane levels of one site's evaluation: each field's digits, least significant first.
 *
 * @throws InvalidArgumentError naming the field when a count is not a non-negative integer, the
 *   confusion matrix does not match (C × C, summing to `examples`, diagonal `correct`), or a field
 *   does not fit {@link EVALUATION_FIELD_BITS} bits.
 */
export function evaluationLevels(evaluation: Evaluation, bits: number): Uint8Array {
  assertEvaluation(evaluation, 'evaluation');
  const fields = evaluationFields(evaluation).map((v) => BigInt(v));
  return splitIntegers(fields, EVALUATION_FIELD_BITS, bits, 'evaluation field');
}

/**
 * The federation-wide totals from the decrypted lane sums of the evaluation lanes (length
 * {@link evaluationLaneCount}). Returns null when the totals are not consistent (confusion not
 * summing to the examples, a total beyond 2^53, more correct rows than rows): one site sent figures
 * that cannot be anyone's, so there is no honest total to report. The model update itself does
 * not depend on these lanes.
 */
export function decodeEvaluation(
  laneSums: ArrayLike<number>,
  classes: number,
  bits: number,
): Evaluation | null {
  const totals = carryIntegers(laneSums, evaluationFieldCount(classes), EVALUATION_FIELD_BITS, bits);
  if (totals === null || totals.some((t) => t > BigInt(Number.MAX_SAFE_INTEGER))) return null;
  const fields = totals.map(Number);
  const [examples, correct, lossFixed] = fields as [number, number, number];
  const evaluation: Evaluation = {
    examples,
    correct,
    lossSum: lossFixed / LOSS_FIXED_POINT,
    classes,
    confusion: fields.slice(3),
  };
  return consistencyProblem(evaluation) === undefined ? evaluation : null;
}

/**
 * Sums evaluations of the same model (the plain-text check of what the lanes compute). Loss sums
 * are summed after the same fixed-point rounding the lanes apply.
 */
export function sumEvaluations(parts: readonly Evaluation[]): Evaluation {
  if (parts.length === 0) throw new InvalidArgumentError('sumEvaluations needs at least one evaluation');
  const classes = parts[0]!.classes;
  parts.forEach((p, i) => {
    assertEvaluation(p, `parts[${i}]`);
    if (p.classes !== classes) {
      throw new InvalidArgumentError(`parts[${i}] has ${p.classes} classes, parts[0] ${classes}`);
    }
  });
  const confusion = parts[0]!.confusion.map((_, i) => parts.reduce((a, p) => a + p.confusion[i]!, 0));
  return {
    examples: parts.reduce((a, p) => a + p.examples, 0),
    correct: parts.reduce((a, p) => a + p.correct, 0),
    lossSum: parts.reduce((a, p) => a + fixedLoss(p.lossSum), 0) / LOSS_FIXED_POINT,
    classes,
    confusion,
  };
}

/** An evaluation of nothing (a site without validation rows still fills its lanes). */
export function emptyEvaluation(classes: number): Evaluation {
  const cells = evaluationFieldCount(classes) - 3;
  return { examples: 0, correct: 0, lossSum: 0, classes, confusion: new Array<number>(cells).fill(0) };
}

/**
 * Throws InvalidArgumentError naming the field when `evaluation` is not a consistent evaluation
 * (integers ≥ 0, finite loss ≥ 0, C × C confusion summing to `examples` with diagonal `correct`).
 */
export function assertEvaluation(evaluation: Evaluation, name: string): void {
  const problem = consistencyProblem(evaluation);
  if (problem !== undefined) throw new InvalidArgumentError(`${name}: ${problem}`);
}

function consistencyProblem(e: Evaluation): string | undefined {
  if (typeof e !== 'object' || e === null) return 'must be an object';
  if (!Number.isInteger(e.classes) || e.classes < 2 || e.classes > 65_536) {
    return `classes ${e.classes} must be an integer in [2, 65536]`;
  }
  const limit = 2 ** EVALUATION_FIELD_BITS;
  for (const field of ['examples', 'correct'] as const) {
    const v = e[field];
    if (!Number.isSafeInteger(v) || v < 0 || v >= limit) {
      return `${field} ${v} must be an integer in [0, 2^${EVALUATION_FIELD_BITS})`;
    }
  }
  if (!Number.isFinite(e.lossSum) || e.lossSum < 0 || fixedLoss(e.lossSum) >= limit) {
    return `lossSum ${e.lossSum} must be finite, ≥ 0 and below 2^${EVALUATION_FIELD_BITS - 16}`;
  }
  if (e.correct > e.examples) return `correct ${e.correct} exceeds examples ${e.examples}`;
  const cells = e.classes <= MAX_CONFUSION_CLASSES ? e.classes * e.classes : 0;
  if (!Array.isArray(e.confusion) || e.confusion.length !== cells) {
    return `confusion has ${e.confusion?.length} cells, ${e.classes} classes need ${cells}`;
  }
  if (cells === 0) return undefined;
  let sum = 0;
  let diagonal = 0;
  for (let i = 0; i < cells; i++) {
    const v = e.confusion[i]!;
    if (!Number.isSafeInteger(v) || v < 0 || v >= limit) {
      return `confusion[${Math.floor(i / e.classes)}][${i % e.classes}] ${v} must be an integer ≥ 0`;
    }
    sum += v;
    if (i % (e.classes + 1) === 0) diagonal += v;
  }
  if (sum !== e.examples) return `confusion sums to ${sum}, examples is ${e.examples}`;
  if (diagonal !== e.correct) return `confusion diagonal sums to ${diagonal}, correct is ${e.correct}`;
  return undefined;
}

function evaluationFields(e: Evaluation): number[] {
  return [e.examples, e.correct, fixedLoss(e.lossSum), ...e.confusion];
}

function fixedLoss(lossSum: number): number {
  return Math.round(lossSum * LOSS_FIXED_POINT);
}

function assertClasses(classes: number): void {
  if (!Number.isInteger(classes) || classes < 2 || classes > 65_536) {
    throw new InvalidArgumentError(`classes ${classes} must be an integer in [2, 65536]`);
  }
}
