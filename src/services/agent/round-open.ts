import { bytesEqual } from '../../../crypto/digest/index.ts';
import { ThresholdLaneContext } from '../../../crypto/threshold/index.ts';
import type { ControlBodies } from '../../protocol/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import type { AgentCore } from './agent-core.ts';
import type { AgentSteps } from './agent-steps.ts';
import { macKeyAt } from './epoch-keys.ts';
import { useEpoch } from './epoch-switch.ts';
import { replayProblem } from './round-attempt.ts';
import { type SitePlan, sitePlanFor } from './site-plan.ts';

/**
 * A RoundOpen (step 2): a candidate still prepared for an earlier round is settled from the log
 * first (its decision was logged before this round opened), a head behind the round's base
 * catches up; then, when the round names this site, it is READY at the base, holds its CKKS key,
 * the pinned weight is one it has, it has not contributed to the round already (a duplicated
 * announcement) and the deadline has not passed, the round's plan
 * ({@link SitePlan}) contributes (trains and sends, or sends statistics) under the abort signal
 * `begin` hands out (aborted when PREPARE or the decision of the round arrives first).
 */
export async function onRoundOpen(
  core: AgentCore,
  steps: AgentSteps,
  open: ControlBodies['round-open'],
  begin: (round: number) => { signal: AbortSignal; done: () => void },
): Promise<void> {
  const log = core.ctx.log.child({ round: open.round });
  const replay = await replayProblem(core, 'round-open', open.round, open.attempt);
  if (replay !== undefined) {
    if (!replay.unavailable) core.counters.replaysRefused++;
    log.warn({ reason: replay.reason }, 'round-open refused');
    return;
  }
  if (core.machine.state === 'PREPARED' && core.preparedRound !== null && core.preparedRound < open.round) {
    await steps.settlePrepared('a later round opened');
  }
  const head = core.store.head()!;
  if (
    core.machine.state === 'READY' &&
    (open.version > head.height || !bytesEqual(open.baseCommit, head.hash))
  ) {
    await steps.catchUp();
  }
  // Threshold keys: the round names the key epoch it encrypts under; a re-shared one is in the log.
  const epochProblem =
    core.ctx.ckks instanceof ThresholdLaneContext
      ? await useEpoch(core, open.epochId ?? new Uint8Array(0), open.round)
      : undefined;
  const assignment = open.assignments.find((a) => a.site === core.member);
  if (assignment === undefined) {
    log.debug('round opened without this site');
    return;
  }
  const skip = (reason: string) => {
    core.counters.roundsSkipped++;
    log.warn({ reason }, 'skipping the round');
  };
  const now = core.store.head()!;
  const state = core.machine.state;
  if (state !== 'READY') return skip(`busy (${state})`);
  // A copy of an announcement already acted on (NATS redelivers on reconnects): training again
  // would replace the staged residual with one whose update was never summed. The staged file
  // outlives a restart; lastUpdate covers a round whose residual is already settled.
  if (core.lastUpdate?.round === open.round || core.store.pendingResidualRounds().includes(open.round)) {
    return skip(`already contributed to round ${open.round}: a duplicated RoundOpen`);
  }
  if (!bytesEqual(open.baseCommit, now.hash) || open.version !== now.height) {
    return skip(
      `base commit ${bytesToHex(open.baseCommit)} (height ${open.version}) is not my head ${bytesToHex(now.hash)} (height ${now.height})`,
    );
  }
  if (epochProblem !== undefined) return skip(epochProblem);
  if (core.keyset === null || macKeyAt(core, open.round) === null)
    return skip(`cannot encrypt: ${core.keysetError ?? `no data key of round ${open.round}'s key epoch`}`);
  // The coordinator may pin less than the site has (a weight capped at a multiple of the round's
  // median), never more.
  if (!(assignment.examples > 0) || assignment.examples > core.examples) {
    return skip(`RoundOpen pins ${assignment.examples} examples for this site, it has ${core.examples}`);
  }
  if (Date.now() >= open.deadlineUnixMs) return skip('deadline already passed');
  const plan = sitePlanFor(open.kind ?? '');
  if (plan === undefined) return skip(`RoundOpen of unknown kind ${JSON.stringify(open.kind)}`);
  const problem = plan.refusal(core, open);
  if (problem !== undefined) return skip(problem);
  const contributing = begin(open.round);
  try {
    await plan.contribute(core, open, assignment.aggregator, contributing.signal);
  } finally {
    contributing.done();
  }
}
