export {
  DECISION_LOG_ERROR_CODES,
  type DecisionBody,
  type DecisionEntry,
  type DecisionLog,
  DecisionLogError,
  type DecisionLogOptions,
  decisionLogStreamName,
  type LoggedDecision,
  openDecisionLog,
} from './decision-log.ts';
