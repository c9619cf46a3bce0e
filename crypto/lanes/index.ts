export { type LaneLayout, laneLayout } from './lane-layout.ts';
export { packLanes, unpackLaneSums } from './lane-pack.ts';
