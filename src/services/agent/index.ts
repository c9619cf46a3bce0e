export {
  type AgentOptions,
  type AgentService,
  type AgentStats,
  type AgentVote,
  startAgent,
} from './agent-service.ts';
export { type FederationGenesis, federationGenesis } from './genesis.ts';
export { loadSiteShard, loadTestSet, type SiteShard } from './site-data.ts';
