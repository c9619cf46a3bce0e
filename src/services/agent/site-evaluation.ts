import type { TrainingEngine } from '../../../gpu/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  assertEvaluation,
  type Evaluation,
  type EvaluationBody,
  emptyEvaluation,
  MAX_CONFUSION_CLASSES,
} from '../../protocol/index.ts';
import type { ExternalTrainer } from '../../trainer/index.ts';
import { bytesToHex, type Commit } from '../../versions/index.ts';
import type { SiteRows } from './site-rows.ts';

/**
 * Evaluates a model on this site's own validation rows: the engine on `validation` (the rows the
 * site loaded, standardized when the federation does), or the site's own trainer process (bring
 * your own trainer, which holds its own rows). Resolves with counts for the model's classes.
 */
export type OwnEvaluator = (
  parameters: Float32Array,
  rows: SiteRows,
  signal?: AbortSignal,
) => Promise<Evaluation>;

/** What the agent keeps of federated evaluation. */
export interface EvaluationState {
  /** How this site evaluates a model, or null (a site without validation rows sends zeros). */
  readonly evaluator: OwnEvaluator | null;
  /** This site's own evaluation of the last model it evaluated (by commit hash, hex). */
  own: { readonly model: string; readonly evaluation: Evaluation } | null;
  /** The totals decrypted while preparing `round` (sent with the YES vote). */
  prepared: { readonly round: number; readonly totals: EvaluationBody } | null;
}

/** A fresh {@link EvaluationState}. */
export function evaluationState(evaluator: OwnEvaluator | null): EvaluationState {
  return { evaluator, own: null, prepared: null };
}

/**
 * This site's evaluation of `commit`'s model (cached: a round opened again on the same base
 * evaluates once). Zeros without an evaluator.
 */
export async function ownEvaluation(
  state: EvaluationState,
  commit: Commit,
  parameters: Float32Array,
  rows: SiteRows,
  classes: number,
  signal?: AbortSignal,
): Promise<Evaluation> {
  const model = bytesToHex(commit.hash);
  if (state.own?.model === model && state.own.evaluation.classes === classes) return state.own.evaluation;
  const evaluation =
    state.evaluator === null ? emptyEvaluation(classes) : await state.evaluator(parameters, rows, signal);
  assertEvaluation(evaluation, 'own evaluation');
  if (evaluation.classes !== classes) {
    throw new InvalidArgumentError(`own evaluation has ${evaluation.classes} classes, the model ${classes}`);
  }
  state.own = { model, evaluation };
  return evaluation;
}

/**
 * An {@link OwnEvaluator} running `engine` on the validation rows it is given: loss, accuracy and
 * the confusion matrix the engine reports; zeros without rows.
 */
export function engineEvaluator(
  engine: () => TrainingEngine | null,
  spec: Parameters<TrainingEngine['evaluate']>[0],
  classes: number,
): OwnEvaluator {
  return async (parameters, { validation: rows }) => {
    if (rows === null || rows.count === 0) return emptyEvaluation(classes);
    const current = engine();
    if (current === null) throw new InvalidArgumentError('no training engine (the agent is stopping)');
    const result = await current.evaluate(spec, parameters, rows);
    const confusion = result.confusion;
    if (confusion === undefined || confusion.length !== classes * classes) {
      throw new InvalidArgumentError(
        `engine ${current.kind} reported no ${classes} × ${classes} confusion matrix`,
      );
    }
    let correct = 0;
    for (let c = 0; c < classes; c++) correct += confusion[c * classes + c]!;
    return {
      examples: result.count,
      correct,
      lossSum: result.loss * result.count,
      classes,
      confusion: classes <= MAX_CONFUSION_CLASSES ? Array.from(confusion) : [],
    };
  };
}

/**
 * An {@link OwnEvaluator} asking the site's own trainer process to evaluate on its own validation
 * rows, standardized with the federation's statistics when there are any.
 */
export function trainerEvaluator(
  trainer: ExternalTrainer,
  spec: Parameters<TrainingEngine['evaluate']>[0],
  classes: number,
): OwnEvaluator {
  return async (parameters, rows, signal) => {
    const r = await trainer.evaluate(spec, parameters, signal, standardizationOf(rows));
    return {
      examples: r.examples,
      correct: r.correct,
      lossSum: r.lossSum,
      classes,
      confusion: classes <= MAX_CONFUSION_CLASSES ? r.confusion.flat() : [],
    };
  };
}

/** The standardization an external trainer applies itself: the rows' standardizer as plain arrays. */
export function standardizationOf(
  rows: SiteRows,
): { readonly mean: readonly number[]; readonly std: readonly number[] } | undefined {
  const s = rows.standardizer;
  return s === null ? undefined : { mean: Array.from(s.mean), std: Array.from(s.std) };
}
