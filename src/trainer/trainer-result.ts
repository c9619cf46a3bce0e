import { type FeatureTotals, STATISTICS_FIELD_BITS, STATISTICS_FRACTION_BITS } from '../protocol/index.ts';
import { TrainerError } from './trainer-error.ts';
import { TRAINER_FILES, TRAINER_PROTOCOL } from './trainer-protocol.ts';
import { MAX_TRAINER_FEATURES } from './trainer-settings.ts';

// result.json, read as hostile input: every field is checked for type, integrality, finiteness and
// range before the agent uses it, and every error names the file and the field.

/** What `describe` reports about the site's own data. */
export interface TrainerDescription {
  /** Training rows (integer ≥ 1): the site's FedAvg weight, announced before rounds. */
  readonly examples: number;
  /** Validation rows held out for `evaluate` (integer ≥ 0). */
  readonly validationExamples: number;
  /** Classes the labels range over, labels being 0 … classes − 1 (integer ≥ 2), when the trainer says. */
  readonly classes?: number;
  /**
   * Features per row of the trainer's data (integer in [1, MAX_TRAINER_FEATURES]), when the trainer
   * says: the length of a standardization and of the statistics' per-feature sums. `statistics`
   * needs it.
   */
  readonly features?: number;
}

/** The numbers of result.json after `train`. */
export interface TrainReport {
  /** Training rows used (integer ≥ 1), equal to what `describe` reported. */
  readonly examples: number;
  /** Mean cross-entropy per example over all steps (finite, ≥ 0; the proximal term excluded). */
  readonly meanLoss: number;
  /** Optimizer steps taken (integer ≥ 0). */
  readonly steps: number;
}

/** What `evaluate` reports on the trainer's own validation rows. */
export interface EvaluationResult {
  /** Validation rows evaluated (integer ≥ 1), equal to `validationExamples` of `describe`. */
  readonly examples: number;
  /** Sum over the rows of the cross-entropy (nats, finite, ≥ 0); mean loss is lossSum / examples. */
  readonly lossSum: number;
  /** Rows whose arg-max prediction is the label (integer in [0, examples]); the trace of `confusion`. */
  readonly correct: number;
  /**
   * classes × classes counts, classes being the model's output width: confusion[t][p] rows of true
   * class t predicted as p. Non-negative integers summing to `examples`.
   */
  readonly confusion: number[][];
}

const FILE = TRAINER_FILES.result;

function show(value: unknown): string {
  if (typeof value === 'number') return String(value);
  const json = JSON.stringify(value);
  return json === undefined ? String(value) : json.length > 60 ? `${json.slice(0, 57)}...` : json;
}

function invalid(
  field: string,
  value: unknown,
  must: string,
  details: Readonly<Record<string, unknown>>,
): TrainerError {
  const is = value === undefined ? 'is missing' : `is ${show(value)}`;
  return new TrainerError('TRAINER_RESULT_INVALID', `${FILE}: ${field} ${is}, must be ${must}`, {
    details: { ...details, file: FILE, field },
  });
}

function integer(
  object: Record<string, unknown>,
  field: string,
  min: number,
  details: Readonly<Record<string, unknown>>,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const value = object[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const must =
      max < Number.MAX_SAFE_INTEGER
        ? `an integer in [${min}, ${max}]`
        : min === 1
          ? 'a positive integer'
          : min === 0
            ? 'a non-negative integer'
            : `an integer ≥ ${min}`;
    throw invalid(field, value, must, details);
  }
  return value;
}

function nonNegativeFinite(
  object: Record<string, unknown>,
  field: string,
  details: Readonly<Record<string, unknown>>,
): number {
  const value = object[field];
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalid(field, value, 'a finite number ≥ 0', details);
  }
  return value;
}

/**
 * result.json's bytes as an object: UTF-8, JSON, an object, `protocol` equal to
 * {@link TRAINER_PROTOCOL}. Fields other than the ones the action defines are ignored.
 *
 * @throws TrainerError `TRAINER_RESULT_INVALID` naming the file (and `protocol`).
 */
export function parseResultJson(
  bytes: Uint8Array,
  details: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (cause) {
    throw new TrainerError(
      'TRAINER_RESULT_INVALID',
      `${FILE} is not UTF-8 JSON (NaN and Infinity are not JSON): ${(cause as Error).message}`,
      { cause, details: { ...details, file: FILE } },
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TrainerError('TRAINER_RESULT_INVALID', `${FILE} must hold a JSON object`, {
      details: { ...details, file: FILE },
    });
  }
  const object = parsed as Record<string, unknown>;
  if (object['protocol'] !== TRAINER_PROTOCOL) {
    throw invalid('protocol', object['protocol'], JSON.stringify(TRAINER_PROTOCOL), details);
  }
  return object;
}

/** The fields of a `describe` result. @throws TrainerError `TRAINER_RESULT_INVALID` naming the field. */
export function parseDescription(
  object: Record<string, unknown>,
  details: Readonly<Record<string, unknown>>,
): TrainerDescription {
  const examples = integer(object, 'examples', 1, details);
  const validationExamples = integer(object, 'validationExamples', 0, details);
  const absent = (field: string): boolean => object[field] === undefined || object[field] === null;
  const classes = absent('classes') ? undefined : integer(object, 'classes', 2, details);
  const features = absent('features')
    ? undefined
    : integer(object, 'features', 1, details, MAX_TRAINER_FEATURES);
  return {
    examples,
    validationExamples,
    ...(classes === undefined ? {} : { classes }),
    ...(features === undefined ? {} : { features }),
  };
}

/** Longest decimal string accepted for a statistics value (2^128 has 39 digits; room for zeros). */
export const MAX_STATISTICS_DIGITS = 80;

const FIELD_LIMIT = 1n << BigInt(STATISTICS_FIELD_BITS);
/** Largest |q| of one value: |x| ≤ 2^40 (STATISTICS_MAX_ABS) in fixed point of 12 bits. */
const MAX_Q = 1n << BigInt(52);

/** A statistics value: a string of decimal digits, below 2^128 (one statistics field). */
function decimal(value: unknown, field: string, details: Readonly<Record<string, unknown>>): bigint {
  if (typeof value !== 'string' || !/^[0-9]+$/.test(value) || value.length > MAX_STATISTICS_DIGITS) {
    throw invalid(field, value, `a string of 1 to ${MAX_STATISTICS_DIGITS} decimal digits`, details);
  }
  const n = BigInt(value);
  if (n >= FIELD_LIMIT) throw invalid(field, value, `below 2^${STATISTICS_FIELD_BITS}`, details);
  return n;
}

/** `object[field]`: an array of `features` decimal strings. */
function decimals(
  object: Record<string, unknown>,
  field: string,
  features: number,
  details: Readonly<Record<string, unknown>>,
): bigint[] {
  const value = object[field];
  if (!Array.isArray(value) || value.length !== features) {
    const must = `an array of ${features} decimal strings (one per feature the trainer described)`;
    if (!Array.isArray(value)) throw invalid(field, value, must, details);
    throw new TrainerError(
      'TRAINER_RESULT_INVALID',
      `${FILE}: ${field} is an array of ${value.length}, must be ${must}`,
      { details: { ...details, file: FILE, field, length: value.length, features } },
    );
  }
  const out: bigint[] = [];
  for (let j = 0; j < features; j++) out.push(decimal(value[j], `${field}[${j}]`, details));
  return out;
}

/**
 * The fields of a `statistics` result, the exact fixed-point sums of the trainer's training rows:
 * `rows` must be `expectedRows` (describe's `examples`); `positive`, `negative` and `squares` hold
 * `features` decimal strings each, every value below 2^128; and per feature j the sums must be
 * those of some rows: rows · squares[j] ≥ (positive[j] − negative[j])² (no negative variance),
 * positive[j]² and negative[j]² at most rows · squares[j] (Cauchy–Schwarz), and positive[j],
 * negative[j] at most rows · 2^52 (no value beyond 2^40 in magnitude).
 *
 * @throws TrainerError `TRAINER_RESULT_INVALID` naming the field (and the index),
 *   `TRAINER_EXAMPLES_CHANGED` when `rows` differs from describe's `examples`.
 */
export function parseStatistics(
  object: Record<string, unknown>,
  expectedRows: number,
  features: number,
  details: Readonly<Record<string, unknown>>,
): FeatureTotals {
  const rows = decimal(object['rows'], 'rows', details);
  if (rows !== BigInt(expectedRows)) {
    throw new TrainerError(
      'TRAINER_EXAMPLES_CHANGED',
      `${FILE}: rows is ${rows}, but describe reported examples ${expectedRows}; ` +
        'the statistics must sum exactly the training rows, so describe again',
      { details: { ...details, file: FILE, field: 'rows', rows: String(rows), expected: expectedRows } },
    );
  }
  const positive = decimals(object, 'positive', features, details);
  const negative = decimals(object, 'negative', features, details);
  const squares = decimals(object, 'squares', features, details);
  for (let j = 0; j < features; j++) {
    const p = positive[j]!;
    const n = negative[j]!;
    const spread = rows * squares[j]!;
    const sum = p - n;
    if (spread < sum * sum) {
      throw invalid(
        `squares[${j}]`,
        String(squares[j]),
        `at least (positive[${j}] − negative[${j}])² / rows: these sums have a negative variance`,
        details,
      );
    }
    for (const [field, v] of [
      ['positive', p],
      ['negative', n],
    ] as const) {
      if (v > rows * MAX_Q) {
        throw invalid(
          `${field}[${j}]`,
          String(v),
          `at most rows · 2^52 (no value beyond 2^40 in fixed point of ${STATISTICS_FRACTION_BITS} bits)`,
          details,
        );
      }
      if (v * v > spread) {
        throw invalid(
          `${field}[${j}]`,
          String(v),
          `at most √(rows · squares[${j}]): no rows have these sums`,
          details,
        );
      }
    }
  }
  return { rows, positive, negative, squares };
}

/** A count that must equal the one `describe` reported. */
function describedCount(
  object: Record<string, unknown>,
  expected: number,
  describedAs: string,
  details: Readonly<Record<string, unknown>>,
): number {
  const examples = integer(object, 'examples', 1, details);
  if (examples !== expected) {
    throw new TrainerError(
      'TRAINER_EXAMPLES_CHANGED',
      `${FILE}: examples is ${examples}, but describe reported ${describedAs} ${expected}; ` +
        'the site data changed, so describe again (the example count is the announced FedAvg weight)',
      { details: { ...details, file: FILE, field: 'examples', examples, expected } },
    );
  }
  return examples;
}

/**
 * The fields of a `train` result; `examples` must be `expectedExamples`.
 *
 * @throws TrainerError `TRAINER_RESULT_INVALID` naming the field, `TRAINER_EXAMPLES_CHANGED`.
 */
export function parseTrainReport(
  object: Record<string, unknown>,
  expectedExamples: number,
  details: Readonly<Record<string, unknown>>,
): TrainReport {
  const examples = describedCount(object, expectedExamples, 'examples', details);
  const meanLoss = nonNegativeFinite(object, 'meanLoss', details);
  const steps = integer(object, 'steps', 0, details);
  return { examples, meanLoss, steps };
}

/**
 * The fields of an `evaluate` result: `examples` must be `expectedExamples`, `confusion` a
 * `classes` × `classes` matrix of non-negative integers summing to `examples` whose trace is
 * `correct`. The matrix returned is a fresh copy.
 *
 * @throws TrainerError `TRAINER_RESULT_INVALID` naming the field (and the cell), `TRAINER_EXAMPLES_CHANGED`.
 */
export function parseEvaluation(
  object: Record<string, unknown>,
  expectedExamples: number,
  classes: number,
  details: Readonly<Record<string, unknown>>,
): EvaluationResult {
  const examples = describedCount(object, expectedExamples, 'validationExamples', details);
  const lossSum = nonNegativeFinite(object, 'lossSum', details);
  const correct = integer(object, 'correct', 0, details);
  if (correct > examples) throw invalid('correct', correct, `at most examples (${examples})`, details);
  const rows = object['confusion'];
  if (!Array.isArray(rows) || rows.length !== classes) {
    const what = Array.isArray(rows) ? `an array of ${rows.length} rows` : show(rows);
    throw new TrainerError(
      'TRAINER_RESULT_INVALID',
      `${FILE}: confusion is ${rows === undefined ? 'missing' : what}, must be ${classes} rows of ${classes} counts (the model's classes)`,
      { details: { ...details, file: FILE, field: 'confusion', classes } },
    );
  }
  const confusion: number[][] = [];
  let total = 0;
  let trace = 0;
  rows.forEach((row: unknown, t) => {
    if (!Array.isArray(row) || row.length !== classes) {
      throw invalid(`confusion[${t}]`, row, `an array of ${classes} counts`, details);
    }
    confusion.push(
      row.map((cell: unknown, p) => {
        if (typeof cell !== 'number' || !Number.isSafeInteger(cell) || cell < 0) {
          throw invalid(`confusion[${t}][${p}]`, cell, 'a non-negative integer', details);
        }
        total += cell;
        if (t === p) trace += cell;
        return cell;
      }),
    );
  });
  if (total !== examples) {
    throw new TrainerError(
      'TRAINER_RESULT_INVALID',
      `${FILE}: confusion sums to ${total}, must sum to examples (${examples})`,
      { details: { ...details, file: FILE, field: 'confusion', total, examples } },
    );
  }
  if (trace !== correct) {
    throw invalid('correct', correct, `the trace of confusion (${trace})`, details);
  }
  return { examples, lossSum, correct, confusion };
}
