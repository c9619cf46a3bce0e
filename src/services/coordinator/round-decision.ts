import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { AggregateInfo, BatchedVote, CulpritRecord, DecisionBody } from '../../protocol/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import type { RoundSummary } from './events.ts';
import { nextRoundClip } from './next-clip.ts';
import { roundAbortReason } from './round-abort.ts';
import { type ActiveRound, type RoundHost, votingRound } from './round-host.ts';
import type { Verdict } from './round-judge.ts';
import { batchVotes, voteEntryLimit } from './vote-batches.ts';

const EMPTY = new Uint8Array(0);

/** Facts of a round its decision records besides the votes. */
export interface RoundFacts {
  readonly round: number;
  readonly kind: 'round' | 'rollback' | 'statistics';
  readonly participants: number;
  readonly started: number;
  readonly contributors: number;
  readonly digest: Uint8Array;
  readonly aggregate: AggregateInfo | null;
  readonly params: Uint8Array;
  readonly rollbackTarget: Uint8Array;
  /** Training rounds: the sites assigned (the cohort) and those whose update the aggregate kept. */
  readonly assigned?: readonly string[];
  readonly contributed?: readonly string[];
  /** Members found at fault for the round's failure (struck instead of the voters they misled). */
  readonly culprits?: readonly CulpritRecord[];
  /** NO voters whose vote proves someone else's fault (a receipt of an update left out): not struck. */
  readonly excused?: readonly string[];
  /** The coordinator's children whose partial was refused or never came, with why: struck. */
  readonly unserving?: readonly { readonly aggregator: string; readonly why: string }[];
  /** Sites assigned under them: whether they delivered cannot be seen, so the breaker skips them. */
  readonly unserved?: readonly string[];
  /** Aggregators whose partial was accepted: credited (strikes cleared) when the round commits. */
  readonly served?: readonly string[];
}

/** A verdict without votes (the round failed before PREPARE). */
export function noVotes(reason: string): Verdict {
  return {
    commit: false,
    reason,
    yes: [],
    no: [],
    missing: [],
    abstained: [],
    commitHash: EMPTY,
    modelHash: EMPTY,
    stateHash: EMPTY,
    evaluation: null,
    params: EMPTY,
    aggregateFault: false,
    deviants: [],
  };
}

/**
 * Records the decision (step 7 of docs/round-protocol.md: the log append is the decision), then
 * applies it: the exclusion table (NO voters and silent voters gain a strike, YES voters of a
 * commit lose theirs), the next clip, the head, and announces it by publishing the very log entry
 * on `decision`.
 */
export async function decide(
  host: RoundHost,
  state: ActiveRound,
  facts: RoundFacts,
  judged: Verdict,
): Promise<RoundSummary> {
  const { ctx } = host;
  // An operator's abort (admin API) wins over any verdict until the decision is logged; it
  // counts against no site.
  const aborted = roundAbortReason(state);
  const verdict = aborted === undefined ? judged : noVotes(aborted);
  const cfg = ctx.config;
  host.setPhase('deciding');
  state.phase = 'decided';
  const head = host.log.history.head.commit;
  const culprits = aborted === undefined ? [...(facts.culprits ?? [])] : [];
  // A NO for a fault of the aggregate every voter found alike is no offence of the voter's: the
  // culprits are struck instead (docs/security.md, "Blame").
  const excused = new Set(facts.excused ?? []);
  const unserving = aborted === undefined ? (facts.unserving ?? []) : [];
  const misled = verdict.aggregateFault ? [] : verdict.no.filter((v) => !excused.has(v));
  // Abstaining costs nothing in a round that commits anyway. When the round fails for want of a YES
  // majority while others could read and voted YES, the abstainers are what stopped it: struck like
  // silent voters, so abstaining every round is no free veto. When nobody voted YES (a store or the
  // log out for everyone), nobody is struck for it.
  const vetoed =
    aborted === undefined &&
    !verdict.commit &&
    verdict.no.length === 0 &&
    verdict.deviants.length === 0 &&
    verdict.yes.length > 0
      ? verdict.abstained
      : [];
  const table = host.membership.nextTable({
    offenders: [
      ...new Set([
        ...misled,
        ...vetoed,
        ...verdict.deviants,
        ...verdict.missing,
        ...culprits.map((c) => c.member),
        ...unserving.map((u) => u.aggregator),
      ]),
    ],
    credited: verdict.commit ? [...verdict.yes, ...(facts.served ?? [])] : [],
    round: facts.round,
    height: head.height,
  });
  const nextClip =
    verdict.commit && facts.kind === 'round'
      ? nextRoundClip(
          host.clip,
          verdict.yes.map((v) => state.votes.get(v)!.meanUpdateRms),
          cfg.round.clipMultiplier,
        )
      : host.clip;
  // The YES voters' totals must evaluate the round's base (the parent): anything else is not kept.
  let evaluation = verdict.commit && facts.kind === 'round' ? verdict.evaluation : null;
  if (evaluation !== null && !bytesEqual(evaluation.model, head.hash)) {
    ctx.log.warn({ round: facts.round }, 'votes evaluate another model than the parent: not recorded');
    evaluation = null;
  }
  const decision: DecisionBody = {
    federation: cfg.federation.id,
    round: facts.round,
    commit: verdict.commit,
    commitHash: verdict.commitHash,
    modelHash: verdict.modelHash,
    parent: head.hash,
    height: verdict.commit ? head.height + 1 : head.height,
    aggregateDigest: facts.digest,
    voters: [...verdict.yes, ...verdict.no, ...verdict.abstained].sort(),
    reason: verdict.reason,
    kind: verdict.commit ? facts.kind : '',
    // A statistics commit's params are the feature sums the voters decrypted (its hash binds them).
    params: verdict.commit ? (facts.kind === 'statistics' ? verdict.params : facts.params) : EMPTY,
    aggregate: facts.aggregate,
    rollbackTarget: facts.rollbackTarget,
    stateHash: verdict.stateHash,
    missing: [...verdict.missing],
    exclusions: table,
    nextClip: Math.fround(nextClip),
    attempt: state.attempt,
    evaluation,
    culprits,
  };
  await logVotes(host, state, decision.voters);
  const entry = await host.log.append({ decision });
  failpoint('coordinator.decision-logged', facts.round);
  host.membership.adopt(table);
  for (const site of misled)
    host.emit({ type: 'excluded', member: site, round: facts.round, reason: 'voted NO' });
  for (const c of culprits)
    host.emit({ type: 'excluded', member: c.member, round: facts.round, reason: `culprit: ${c.fault}` });
  for (const site of verdict.deviants)
    host.emit({
      type: 'excluded',
      member: site,
      round: facts.round,
      reason: 'voted YES on another candidate',
    });
  for (const site of verdict.missing)
    host.emit({ type: 'excluded', member: site, round: facts.round, reason: 'did not vote' });
  for (const site of vetoed)
    host.emit({
      type: 'excluded',
      member: site,
      round: facts.round,
      reason: 'abstained where others voted YES, and the round failed for want of a majority',
    });
  for (const u of unserving)
    host.emit({ type: 'excluded', member: u.aggregator, round: facts.round, reason: `partial: ${u.why}` });
  host.clip = nextClip;
  const publishedAt = host.now();
  if (verdict.commit) {
    host.switches.track(
      facts.round,
      { hash: verdict.commitHash, height: decision.height },
      verdict.yes,
      publishedAt,
    );
  }
  try {
    await ctx.transport.publish(ctx.subjects.decision, entry.bytes);
  } catch (err) {
    // The log holds the decision; members that missed the broadcast read it there.
    ctx.log.error({ round: facts.round, err }, 'decision logged but not announced');
  }
  if (host.current === state) host.current = undefined;
  // An operator's abort says nothing about the sites: the breaker does not count it.
  if (aborted === undefined) {
    const contributed = new Set(facts.contributed ?? []);
    const unserved = new Set(facts.unserved ?? []);
    const late = (facts.assigned ?? []).filter((s) => !contributed.has(s) && !unserved.has(s));
    host.roundDecided({
      round: facts.round,
      expected: [
        ...(facts.assigned ?? []),
        ...verdict.yes,
        ...verdict.no,
        ...verdict.abstained,
        ...verdict.missing,
      ],
      // The breaker counts the sites at fault, never the voters a culprit misled.
      failing: [
        ...late,
        ...misled,
        ...vetoed,
        ...verdict.deviants,
        ...verdict.missing,
        ...culprits.filter((c) => c.role === 'site').map((c) => c.member),
      ],
      committed: verdict.commit,
    });
  }
  ctx.log.info(
    { round: facts.round, commit: verdict.commit, reason: verdict.reason, sequence: entry.sequence },
    'decision',
  );
  return {
    round: facts.round,
    kind: facts.kind,
    commit: verdict.commit,
    reason: verdict.reason,
    contributors: facts.contributors,
    participants: facts.participants,
    commitHash: verdict.commit ? bytesToHex(verdict.commitHash) : undefined,
    height: decision.height,
    logSequence: entry.sequence,
    aggregateBytes: facts.aggregate?.objectBytes ?? 0,
    uploadBytes: [...state.votes.values()].reduce(
      (a, v) => a + (Number.isSafeInteger(v.bytesSent) && v.bytesSent > 0 ? v.bytesSent : 0),
      0,
    ),
    durationMs: host.now() - facts.started,
    noVoters: verdict.no,
    missing: verdict.missing,
    evaluation,
    culprits,
  };
}

/**
 * Appends the voters' votes, as received, before the decision that counts them (docs/log-format.md:
 * the decision's voters are exactly the members of the round's logged votes), in as few entries
 * as fit ({@link batchVotes}): one coordinator signature and one read per batch instead of per vote.
 * A crash between these appends and the decision leaves the round undecided: the next run aborts it.
 */
async function logVotes(host: RoundHost, state: ActiveRound, voters: readonly string[]): Promise<void> {
  const votes: BatchedVote[] = [];
  for (const member of voters) {
    const envelope = state.envelopes.get(member);
    if (envelope === undefined) continue; // not counted without its envelope: the history would refuse it
    votes.push({ member, envelope });
  }
  for (const batch of batchVotes(votes, voteEntryLimit(host.ctx.transport.maxPayload))) {
    await host.log.append({ votes: { round: state.round, attempt: state.attempt, votes: batch } });
  }
  failpoint('coordinator.votes-logged', state.round);
}

/**
 * Appends ABORT for a round a previous run opened and never decided (the coordinator died between
 * RoundOpen and its decision: before, during or after PREPARE). Agents prepared for it discard
 * their candidate at once, and the round number is never used again.
 */
export async function abortOpenRound(
  host: RoundHost,
  round: number,
  attempt: Uint8Array,
  reason: string,
): Promise<RoundSummary> {
  const state: ActiveRound = votingRound(round, attempt);
  const facts: RoundFacts = {
    round,
    kind: 'round',
    participants: 0,
    started: host.now(),
    contributors: 0,
    digest: EMPTY,
    aggregate: null,
    params: EMPTY,
    rollbackTarget: EMPTY,
  };
  return decide(host, state, facts, noVotes(reason));
}
