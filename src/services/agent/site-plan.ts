import type { ControlBodies } from '../../protocol/index.ts';
import type { PreparedCandidate } from '../../versions/index.ts';
import type { AgentCore } from './agent-core.ts';
import { rollbackSitePlan } from './rollback-plan.ts';
import { statisticsSitePlan } from './statistics-round.ts';
import { trainingSitePlan } from './training-plan.ts';

/**
 * One kind of round as a site takes part in it (docs/round-lifecycle.md): the agent's RoundOpen
 * and PREPARE handlers check what every round needs (attempt, state, base, deadline, keys) and
 * leave the rest to the round's plan.
 */
export interface SitePlan {
  /** Why this site cannot contribute to `open`, or undefined when it can. */
  refusal(core: AgentCore, open: ControlBodies['round-open']): string | undefined;
  /**
   * Contributes to `open` through `aggregator` (train and send an update, or send statistics),
   * stopping when `signal` aborts; failures are logged, never thrown.
   */
  contribute(
    core: AgentCore,
    open: ControlBodies['round-open'],
    aggregator: string,
    signal: AbortSignal,
  ): Promise<void>;
  /**
   * The candidate PREPARE `p` proposes on the head (its base and round already checked); throws
   * `VoteNo` (or any error) with the reason to vote NO.
   */
  candidate(core: AgentCore, p: ControlBodies['prepare']): Promise<PreparedCandidate>;
}

const PLANS: Readonly<Record<string, SitePlan>> = {
  '': trainingSitePlan,
  round: trainingSitePlan,
  statistics: statisticsSitePlan,
  rollback: rollbackSitePlan,
};

/**
 * The plan of a round of `kind` (RoundOpen's or PREPARE's; '' is a training round written
 * before kinds), or undefined for a kind this site does not know.
 */
export function sitePlanFor(kind: string): SitePlan | undefined {
  return Object.hasOwn(PLANS, kind) ? PLANS[kind] : undefined;
}
