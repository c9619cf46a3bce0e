export type { AgentOptions, AgentStats, AgentVote } from './agent-core.ts';
export { AGENT_ERROR_CODES, AgentError, type AgentErrorCode } from './agent-error.ts';
export { type AgentService, startAgent } from './agent-service.ts';
export { type FederationGenesis, federationGenesis } from './genesis.ts';
export {
  type AgentData,
  loadAgentData,
  loadContractData,
  loadSiteShard,
  loadTestSet,
  type SiteShard,
} from './site-data.ts';
