export {
  type AdminControls,
  MAX_ABORT_REASON,
  type MemberStatus,
  type QueuedRegistryChange,
} from './admin-control.ts';
export {
  BREAKER_LEVELS,
  type BreakerCohort,
  type BreakerLevel,
  type BreakerLevelName,
  type BreakerSettings,
  type BreakerState,
  type BreakerTransition,
  CircuitBreaker,
  levelFor,
  type RoundOutcome,
} from './circuit-breaker.ts';
export {
  ADMIN_ACTION_MAX_ARGUMENT_BYTES,
  type CoordinatorLog,
  openCoordinatorLog,
} from './coordinator-log.ts';
export { startCoordinator } from './coordinator-service.ts';
export type {
  CoordinatorEvent,
  CoordinatorHandle,
  CoordinatorOptions,
  CoordinatorStats,
  CoordinatorSummary,
  RoundSummary,
} from './events.ts';
export { MAX_SIT_OUT_ROUNDS, Membership, sitOutRounds } from './membership.ts';
export { ROLLBACK_REQUEST_WINDOW_MS } from './rollback-queue.ts';
export { judgeVotes, type Verdict } from './round-judge.ts';
export {
  MAX_RUN_LABEL,
  MAX_RUN_ROUNDS,
  type RunInfo,
  type RunSettings,
  type RunState,
} from './run-control.ts';
export { SNAPSHOT_ACK } from './snapshot-intake.ts';
