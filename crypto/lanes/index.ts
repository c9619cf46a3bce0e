export type { LaneContext, LaneKeyset, LanePosition, LaneVector } from './lane-cipher.ts';
export { type LaneLayout, laneLayout } from './lane-layout.ts';
export { clampLaneSums, packLanes, roundSlots } from './lane-pack.ts';
