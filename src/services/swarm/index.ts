export { MAX_SWARM_MEMBERS, parseSiteList } from './site-list.ts';
export { type SwarmFailure, type SwarmHandle, type SwarmOptions, startSwarm } from './swarm.ts';
export { MAX_SYNTHETIC_ROWS, type SyntheticSite, syntheticSiteData } from './synthetic-site-data.ts';
