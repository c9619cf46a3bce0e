import { bytesEqual } from '../../../crypto/digest/index.ts';
import { type ControlBodies, sealControl } from '../../protocol/index.ts';
import { bytesToHex, type Commit, type PreparedCandidate, strategyStateHash } from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import { StoreError } from '../store/index.ts';
import type { AgentCore } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import type { AgentSteps } from './agent-steps.ts';
import { readUnavailable } from './read-retry.ts';
import { replayProblem } from './round-attempt.ts';
import { sitePlanFor } from './site-plan.ts';
import { VoteNo } from './voter-error.ts';

export { VoteNo };

/**
 * The candidate a PREPARE proposes on top of the store's head (round step 7,
 * docs/round-protocol.md): PREPARE must be on the head, for a later round, of a kind this site
 * knows; the round's plan makes the candidate (a training round decrypts and applies the
 * aggregate, a statistics round decrypts the feature sums, a rollback takes the target's model).
 * Throws {@link VoteNo} (or any error) with the reason to vote NO.
 */
export async function candidateFor(core: AgentCore, p: ControlBodies['prepare']): Promise<PreparedCandidate> {
  const head = core.store.head()!;
  if (!bytesEqual(p.baseCommit, head.hash) || p.version !== head.height) {
    throw new VoteNo(
      `wrong base: PREPARE is on ${bytesToHex(p.baseCommit)} (height ${p.version}), my head is ${bytesToHex(head.hash)} (height ${head.height})`,
    );
  }
  if (p.round <= head.round) throw new VoteNo(`round ${p.round} is not after my head's round ${head.round}`);
  const plan = sitePlanFor(p.kind);
  if (plan === undefined) throw new VoteNo(`PREPARE of unknown kind ${JSON.stringify(p.kind)}`);
  return plan.candidate(core, p);
}

/** Whether `p` is the PREPARE `candidate` was made from (a repeat may be answered with the same vote). */
export function samePrepare(candidate: PreparedCandidate, p: ControlBodies['prepare']): boolean {
  const c = candidate.commit;
  const kind = p.kind === '' ? 'round' : p.kind;
  return (
    c.round === p.round &&
    c.kind === kind &&
    bytesEqual(c.parent, p.baseCommit) &&
    bytesEqual(c.params, p.params) &&
    (kind === 'rollback' || bytesEqual(c.aggregateDigest, p.aggregateDigest))
  );
}

/**
 * A PREPARE (step 5): a candidate of an earlier round is settled from the log first; a repeat of
 * the PREPARE this site prepared gets the same YES, any other PREPARE for that round NO; a READY
 * site behind the PREPARE's base catches up, then computes the candidate ({@link candidateFor}),
 * writes it durably as prepared (PREPARED) and votes YES — or NO with the reason. Every site
 * answers, voter or not: one whose vote the coordinator does not count still switches along.
 */
export async function onPrepare(
  core: AgentCore,
  steps: AgentSteps,
  p: ControlBodies['prepare'],
): Promise<void> {
  if (failpoint('agent.prepare', p.round) === 'skip') return; // a site that never votes
  const { machine, store } = core;
  const log = core.ctx.log.child({ round: p.round });
  const replay = await replayProblem(core, 'prepare', p.round, p.attempt);
  if (replay?.unavailable === true) {
    // The log did not answer: nothing says the PREPARE is a replay, nor that the round is wrong.
    log.warn({ reason: replay.reason }, 'abstaining');
    await vote(core, p, false, replay.reason, undefined, undefined, true);
    return;
  }
  if (replay !== undefined) {
    core.counters.replaysRefused++;
    log.warn({ reason: replay.reason }, 'prepare refused');
    return;
  }
  if (machine.state === 'PREPARED' && core.preparedRound !== null && core.preparedRound < p.round) {
    await steps.settlePrepared('a later PREPARE arrived');
  }
  if (machine.state === 'PREPARED') {
    const r = core.preparedRound;
    const candidate = r === null ? null : store.prepared(r);
    if (candidate !== null && r === p.round && samePrepare(candidate, p)) {
      await vote(core, p, true, '', candidate); // a repeated PREPARE
    } else if (r === p.round) {
      await vote(core, p, false, `a different PREPARE for round ${p.round} than the one prepared`);
    } else {
      await vote(core, p, false, `still prepared for round ${r}, whose decision is not in the log`);
    }
    return;
  }
  const head = store.head()!;
  if (machine.state === 'READY' && (p.version > head.height || !bytesEqual(p.baseCommit, head.hash))) {
    await steps.catchUp();
  }
  const state = machine.state;
  if (state !== 'READY') {
    await vote(core, p, false, `busy (${state})`);
    return;
  }
  let candidate: PreparedCandidate;
  try {
    // Tests: the stores this site reads the candidate from do not answer (as after its retries).
    if (failpoint('agent.prepare-unavailable', p.round) === 'skip') {
      throw new AgentError('REPLAY_UNAVAILABLE', `cannot read round ${p.round}'s aggregate`, {
        cause: new StoreError(
          'STORE_UNAVAILABLE',
          'the store did not answer (failpoint agent.prepare-unavailable)',
        ),
      });
    }
    candidate = await candidateFor(core, p);
    store.prepare(candidate);
  } catch (err) {
    const reason = describe(err);
    // A store or the log that did not answer in time (after its retries) is no objection to the
    // round: abstain, so the others' YES can still commit it and this site is not struck.
    const abstain = !(err instanceof VoteNo) && readUnavailable(err);
    log.warn({ reason }, abstain ? 'abstaining' : 'voting NO');
    await vote(core, p, false, reason, undefined, err instanceof VoteNo ? err.receipt : undefined, abstain);
    return;
  }
  core.preparedRound = p.round;
  machine.transition('PREPARED', `PREPARE r${p.round} ${bytesToHex(candidate.commit.hash).slice(0, 12)}`);
  steps.armDecisionTimer(p.round);
  await vote(core, p, true, '', candidate);
  failpoint('agent.voted', p.round);
}

/**
 * Sends a signed vote on PREPARE `p` (a request: the coordinator acknowledges it), naming the
 * round's attempt; failures are logged.
 */
export async function vote(
  core: AgentCore,
  p: Pick<ControlBodies['prepare'], 'round' | 'attempt'>,
  yes: boolean,
  reason: string,
  candidate?: PreparedCandidate,
  receipt?: Uint8Array,
  abstain = false,
): Promise<void> {
  const round = p.round;
  const sent = core.lastUpdate?.round === round ? core.lastUpdate : null;
  const commit: Commit | undefined = candidate?.commit;
  const body: ControlBodies['vote'] = {
    federation: core.ctx.config.federation.id,
    round,
    member: core.member,
    yes,
    commitHash: commit?.hash ?? new Uint8Array(0),
    modelHash: commit?.modelHash ?? new Uint8Array(0),
    reason: reason.slice(0, 1000),
    // Never this site's own RMS: the contributors' median, decrypted from the aggregate's histogram.
    meanUpdateRms: yes && core.preparedRms?.round === round ? core.preparedRms.rms : 0,
    bytesSent: sent?.bytes ?? 0,
    stateHash: candidate ? strategyStateHash(candidate.strategyState) : new Uint8Array(0),
    attempt: p.attempt,
    evaluation: yes && core.evaluation.prepared?.round === round ? core.evaluation.prepared.totals : null,
    params: yes && commit?.kind === 'statistics' ? commit.params : new Uint8Array(0),
    receipt: !yes && receipt !== undefined ? receipt : new Uint8Array(0),
    abstain: !yes && abstain,
  };
  if (yes) core.counters.votesYes++;
  else if (body.abstain) core.counters.abstentions++;
  else core.counters.votesNo++;
  core.counters.lastVote = {
    round,
    yes,
    reason: body.reason,
    commitHash: commit ? bytesToHex(commit.hash) : '',
  };
  try {
    await core.ctx.transport.request(
      core.ctx.subjects.vote(core.member),
      sealControl('vote', body, core.member, core.ctx.signing),
    );
    core.ctx.log.info(
      { round, yes, reason: body.reason || undefined, commit: commit ? bytesToHex(commit.hash) : undefined },
      'voted',
    );
  } catch (err) {
    core.ctx.log.error({ round, yes, err }, 'vote not acknowledged');
  }
}

/** An error as one line: `CODE: message` for Cohort errors, the message for a {@link VoteNo}. */
export function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' && !(err instanceof VoteNo) ? `${code}: ${err.message}` : err.message;
  }
  return String(err);
}
