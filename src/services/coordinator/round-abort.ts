import type { ActiveRound } from './round-host.ts';

/** Operators' abort requests of open rounds (`CoordinatorHandle.abortRound`), by round state. */
const requested = new WeakMap<ActiveRound, string>();

/**
 * Marks `state` (the open round) to be decided ABORT with `reason`: the coordinator's waits end
 * at once and {@link roundAbortReason} turns whatever verdict the round reaches into an ABORT
 * (the first request's reason wins). Nothing is logged here; the decision is.
 */
export function requestRoundAbort(state: ActiveRound, reason: string): void {
  if (!requested.has(state)) requested.set(state, reason);
}

/** The reason an operator gave to abort `state`, if one did. */
export function roundAbortReason(state: ActiveRound | undefined): string | undefined {
  return state === undefined ? undefined : requested.get(state);
}
