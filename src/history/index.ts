export {
  type CommitDiff,
  DIFFED_PARAMS,
  type DiffedParam,
  type DiffRollback,
  type DiffRound,
  diffCommits,
  type ParamChange,
} from './commit-diff.ts';
export { commitRoundParams } from './commit-params.ts';
export { FederationTimeline, type TimelineRound } from './federation-timeline.ts';
export { HISTORY_ERROR_CODES, HistoryError, type HistoryErrorCode } from './history-error.ts';
export { type LayerDiffStats, layerDiffStats, type TensorDiffStats } from './layer-diff.ts';
export {
  EXPORT_FORMATS,
  exportMetadata,
  missingModelMessage,
  requireStoredModel,
} from './model-export.ts';
export { readTimeline, syncTimeline } from './read-timeline.ts';
export { MIN_REF_PREFIX, resolveRef } from './resolve-ref.ts';
export {
  findRollbackOutcome,
  type RollbackOutcome,
  type RollbackWaitOptions,
  waitForRollbackOutcome,
} from './rollback-wait.ts';
export { assertModelStore, isModelStore, readStoredModel } from './stored-model.ts';
export {
  type AbortJson,
  abortJson,
  type CommitJson,
  type ContributorJson,
  commitJson,
  contributorsJson,
  type ShowJson,
  type SnapshotJson,
  showJson,
} from './version-json.ts';
export { type LogItem, logItems, logJson } from './version-log-items.ts';
