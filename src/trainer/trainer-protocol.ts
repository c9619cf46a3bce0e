import type { Standardization, TrainSettings } from './trainer-settings.ts';

// The file-level contract between the site agent and an external trainer (docs/trainer-protocol.md).

/** The protocol name and version the agent writes into every request and expects back in every result. */
export const TRAINER_PROTOCOL = 'cohort-trainer/1';

/** What the agent asks of the trainer in one call. */
export type TrainerAction = 'describe' | 'statistics' | 'train' | 'evaluate';

/** File names inside a per-call folder; the request names them again, relative to its own folder. */
export const TRAINER_FILES = Object.freeze({
  /** Written by the agent: the {@link TrainerRequest}. Its absolute path is the command's last argument. */
  request: 'request.json',
  /** Written by the agent for train and evaluate: the global model (safetensors, F32). */
  input: 'model.safetensors',
  /** Written by the trainer for train: the trained model, same tensor names, shapes and dtype. */
  output: 'result.safetensors',
  /** Written by the trainer for every action: the result fields, as JSON. */
  result: 'result.json',
});

/** request.json of a `describe` call. */
export interface DescribeRequest {
  readonly protocol: typeof TRAINER_PROTOCOL;
  readonly action: 'describe';
  readonly result: string;
}

/**
 * request.json of a `statistics` call: the trainer writes the exact fixed-point sums of its training
 * rows (docs/trainer-protocol.md, "statistics").
 */
export interface StatisticsRequest {
  readonly protocol: typeof TRAINER_PROTOCOL;
  readonly action: 'statistics';
  readonly result: string;
}

/** request.json of a `train` call; `model` is the model spec exactly as the federation configures it. */
export interface TrainRequest {
  readonly protocol: typeof TRAINER_PROTOCOL;
  readonly action: 'train';
  readonly model: unknown;
  readonly settings: TrainSettings;
  readonly input: string;
  readonly output: string;
  readonly result: string;
}

/**
 * request.json of an `evaluate` call; `standardization`, when present, is applied by the trainer to
 * its validation rows before evaluating (absent: the rows as they are).
 */
export interface EvaluateRequest {
  readonly protocol: typeof TRAINER_PROTOCOL;
  readonly action: 'evaluate';
  readonly model: unknown;
  readonly input: string;
  readonly result: string;
  readonly standardization?: Standardization;
}

/** Any request.json the agent writes. */
export type TrainerRequest = DescribeRequest | StatisticsRequest | TrainRequest | EvaluateRequest;
