export { createExternalTrainer, type ExternalTrainer, type TrainResult } from './external-trainer.ts';
export { INHERITED_ENV } from './trainer-env.ts';
export { TRAINER_ERROR_CODES, TrainerError, type TrainerErrorCode } from './trainer-error.ts';
export {
  DEFAULT_KEEP_FAILED_CALLS,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_MAX_RESULT_JSON_BYTES,
  type ExternalTrainerOptions,
  MAX_RESULT_HEADER_BYTES,
} from './trainer-options.ts';
export { STDERR_TAIL_BYTES } from './trainer-process.ts';
export {
  type DescribeRequest,
  type EvaluateRequest,
  type StatisticsRequest,
  TRAINER_FILES,
  TRAINER_PROTOCOL,
  type TrainerAction,
  type TrainerRequest,
  type TrainRequest,
} from './trainer-protocol.ts';
export {
  type EvaluationResult,
  MAX_STATISTICS_DIGITS,
  type TrainerDescription,
  type TrainReport,
} from './trainer-result.ts';
export { MAX_TRAINER_FEATURES, type Standardization, type TrainSettings } from './trainer-settings.ts';
