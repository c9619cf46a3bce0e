export {
  AGENT_STATE_ERROR_CODES,
  AGENT_STATES,
  AGENT_TRANSITIONS,
  type AgentState,
  AgentStateError,
  type AgentStateErrorCode,
  type AgentStateListener,
  AgentStateMachine,
  type AgentStateMachineOptions,
  type AgentTransition,
  isAgentState,
  isLegalTransition,
} from './agent-state.ts';
