export type { AgentOptions, AgentStats, AgentVote } from './agent-core.ts';
export { AGENT_ERROR_CODES, AgentError, type AgentErrorCode } from './agent-error.ts';
export { type AgentService, startAgent } from './agent-service.ts';
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
export { type FederationGenesis, federationGenesis } from './genesis.ts';
export {
  type AgentData,
  loadAgentData,
  loadContractData,
  loadSiteShard,
  loadTestSet,
  type SiteShard,
} from './site-data.ts';
