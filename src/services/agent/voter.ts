import { bytesEqual } from '../../../crypto/digest/index.ts';
import {
  type AggregateInfo,
  type ControlBodies,
  decodeStatistics,
  encodeStatisticsParams,
  sealControl,
  statisticsLaneCount,
} from '../../protocol/index.ts';
import { aggregateDigest, decodeRoundParams, type RoundPrivacy } from '../../round/index.ts';
import {
  bytesToHex,
  type Commit,
  modelHash,
  type PreparedCandidate,
  rollbackCommit,
  roundCommit,
  statisticsCommit,
  strategyStateHash,
} from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import { contractFeatureCount, federatedStandardization } from '../statistics-plan.ts';
import type { AgentCore } from './agent-core.ts';
import type { AgentSteps } from './agent-steps.ts';
import { fetchAggregate } from './aggregate-fetch.ts';
import { applyAggregate, decryptAggregate } from './apply-aggregate.ts';
import { materialize } from './catch-up.ts';
import { checkPrivacyRecord } from './privacy-record.ts';
import { robustDeltaFor } from './robust-record.ts';
import { replayProblem } from './round-attempt.ts';
import { UPDATE_DROPPED, VoteNo } from './voter-error.ts';

export { VoteNo };

/**
 * The candidate a PREPARE proposes on top of the store's head (round step 7,
 * docs/round-protocol.md): for a training round, the aggregate's digest is recomputed from the
 * ciphertexts and must be the one PREPARE names, then it is decrypted and applied
 * (`applyAggregate`); for a rollback, the target's model (from the store, or rebuilt) with a fresh
 * strategy state. Throws {@link VoteNo} (or any error) with the reason to vote NO.
 */
export async function candidateFor(core: AgentCore, p: ControlBodies['prepare']): Promise<PreparedCandidate> {
  const head = core.store.head()!;
  if (!bytesEqual(p.baseCommit, head.hash) || p.version !== head.height) {
    throw new VoteNo(
      `wrong base: PREPARE is on ${bytesToHex(p.baseCommit)} (height ${p.version}), my head is ${bytesToHex(head.hash)} (height ${head.height})`,
    );
  }
  if (p.round <= head.round) throw new VoteNo(`round ${p.round} is not after my head's round ${head.round}`);
  if (p.kind === 'rollback') {
    const target =
      core.follower.history.commitByHash(p.rollbackTarget) ??
      (await core.follower.sync().then(() => core.follower.history.commitByHash(p.rollbackTarget)));
    if (target === undefined)
      throw new VoteNo(
        `rollback target ${bytesToHex(p.rollbackTarget).slice(0, 12)} is not on the log's chain`,
      );
    if (!(target.commit.height < head.height)) throw new VoteNo('rollback target is not below my head');
    const parameters = await materialize(core, target);
    const commit = rollbackCommit(head, target.commit, p.round, p.params);
    return { commit, parameters, strategyState: core.strategy.initialState(parameters.length) };
  }
  if (p.kind !== 'round' && p.kind !== '' && p.kind !== 'statistics')
    throw new VoteNo(`PREPARE of unknown kind ${JSON.stringify(p.kind)}`);
  if (core.keyset === null || core.macKey === null) throw new VoteNo(`cannot decrypt: ${core.keysetError}`);
  checkContributors(core, p);
  let ciphertexts = p.ciphertexts;
  if (ciphertexts.length === 0 && p.aggregateObject !== '') {
    ciphertexts = await fetchAggregate(core, p.aggregateObject, p.totalParams, p.aggregateDigest, 'vote-no');
  } else if (!bytesEqual(aggregateDigest(ciphertexts), p.aggregateDigest)) {
    throw new VoteNo('the ciphertexts do not hash to the aggregate digest PREPARE names');
  }
  // The log has the round open, of the kind PREPARE says.
  const open = core.follower.history.openRound?.roundOpen;
  if (open === undefined || open.round !== p.round)
    throw new VoteNo(`the log does not show round ${p.round} open`);
  if ((open.kind ?? '') !== (p.kind === 'statistics' ? 'statistics' : '')) {
    throw new VoteNo(`PREPARE of kind ${p.kind} for round ${p.round}, opened as ${open.kind || 'round'}`);
  }
  const info: AggregateInfo = {
    encoding: p.encoding,
    totalParams: p.totalParams,
    contributors: p.contributors,
    totalWeight: p.totalWeight,
    participants: p.participants,
    totalExamples: p.totalExamples,
    object: '',
    objectBytes: 0,
  };
  const w = core.store.readModel(head);
  if (p.kind === 'statistics') return statisticsCandidate(core, p, info, ciphertexts, w);
  checkPrivacyRecord(core, head, p, () => paramsPrivacy(p.params));
  const robust = await robustDeltaFor(
    core,
    {
      params: p.params,
      round: p.round,
      contributors: p.contributors.map((c) => c.site),
      parameters: w.length,
    },
    'vote-no',
  );
  const next = applyAggregate(core, w, core.store.loadStrategyState(), info, ciphertexts, p, robust);
  const commit = roundCommit(head, {
    round: p.round,
    aggregateDigest: p.aggregateDigest,
    modelHash: modelHash(next.parameters),
    params: p.params,
  });
  // The contributors' median RMS (from the aggregate, never this site's own) goes with the YES vote.
  core.preparedRms = next.medianRms === null ? null : { round: p.round, rms: next.medianRms };
  // The totals of the base model's evaluation go with the YES vote (the coordinator records them).
  core.evaluation.prepared =
    next.evaluation === null ? null : { round: p.round, totals: { ...next.evaluation, model: head.hash } };
  if (next.evaluation !== null && next.evaluation.examples > 0) {
    const e = next.evaluation;
    core.ctx.log.info(
      {
        round: p.round,
        examples: e.examples,
        accuracy: e.correct / e.examples,
        loss: e.lossSum / e.examples,
      },
      'federated evaluation of the base model (decrypted totals)',
    );
  }
  return { commit, parameters: next.parameters, strategyState: next.strategyState };
}

/**
 * The candidate of a statistics round: the federation's feature sums decrypted from the aggregate
 * (never fewer than `round.minContributors` sites), encoded as the commit's params; the model and
 * strategy state stay the head's.
 */
function statisticsCandidate(
  core: AgentCore,
  p: ControlBodies['prepare'],
  info: AggregateInfo,
  ciphertexts: readonly Uint8Array[],
  w: Float32Array,
): PreparedCandidate {
  const features = contractFeatureCount(core.ctx.config);
  if (features === null || !federatedStandardization(core.ctx.config)) {
    throw new VoteNo(
      'a statistics round, but this federation does not standardize with federated statistics',
    );
  }
  if (p.totalParams !== statisticsLaneCount(features, p.encoding.bits)) {
    throw new VoteNo(
      `statistics of ${p.totalParams} lanes, ${features} features need ${statisticsLaneCount(features, p.encoding.bits)}`,
    );
  }
  const decoded = decryptAggregate(core, info, ciphertexts, p);
  const totals = decodeStatistics(decoded.laneSums, features, p.encoding.bits);
  if (totals === null)
    throw new VoteNo('the statistics sums cannot be anyone’s (no rows, or a negative variance)');
  const head = core.store.head()!;
  const commit = statisticsCommit(head, {
    round: p.round,
    aggregateDigest: p.aggregateDigest,
    params: encodeStatisticsParams(totals),
  });
  core.ctx.log.info(
    { round: p.round, rows: Number(totals.rows), features },
    'federated statistics decrypted',
  );
  const strategyState = core.store.loadStrategyState() ?? core.strategy.initialState(w.length);
  return { commit, parameters: w, strategyState };
}

/**
 * What a site checks of an aggregate's contributor list before decrypting it (`applyAggregate`
 * then refuses fewer than `round.minContributors` sites): its own update, when it delivered one
 * this round, listed with the digest and weight it signed. An aggregator that dropped it, or
 * listed another update under its name, is caught here.
 */
function checkContributors(core: AgentCore, p: ControlBodies['prepare']): void {
  const sent = core.lastUpdate?.round === p.round ? core.lastUpdate : null;
  const listed = p.contributors.find((c) => c.site === core.member);
  // My aggregator's partial is in (another of its sites is listed) but my acknowledged update is
  // not: it was dropped. A partial cut whole (late, refused) lists none of its sites: no offence.
  if (sent !== null && listed === undefined && p.contributors.some((c) => sent.peers.includes(c.site))) {
    throw new VoteNo(
      `${UPDATE_DROPPED}: my update of round ${p.round} was received by ${sent.aggregator}, whose partial is in the aggregate without it`,
      sent.receipt ?? undefined,
    );
  }
  if (listed !== undefined && sent !== null && !bytesEqual(listed.digest, sent.digest)) {
    throw new VoteNo(
      `the aggregate lists another update under my name (digest ${bytesToHex(listed.digest).slice(0, 12)})`,
    );
  }
  if (listed !== undefined && listed.weight !== core.examples) {
    throw new VoteNo(`the aggregate lists my weight as ${listed.weight}, I have ${core.examples} examples`);
  }
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
  if (replay !== undefined) {
    core.counters.replaysRefused++;
    log.warn({ reason: replay }, 'prepare refused');
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
    candidate = await candidateFor(core, p);
    store.prepare(candidate);
  } catch (err) {
    const reason = describe(err);
    log.warn({ reason }, 'voting NO');
    await vote(core, p, false, reason, undefined, err instanceof VoteNo ? err.receipt : undefined);
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
  };
  if (yes) core.counters.votesYes++;
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

/** The privacy record of PREPARE's params (null without one). */
function paramsPrivacy(params: Uint8Array): RoundPrivacy | null {
  try {
    return decodeRoundParams(params).privacy ?? null;
  } catch (err) {
    throw new VoteNo(`PREPARE's round params do not decode: ${(err as Error).message}`);
  }
}
