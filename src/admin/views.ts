import type { FederationTimeline, TimelineRound } from '../history/index.ts';
import type { ControlBodies, EvaluationBody } from '../protocol/index.ts';
import type { BreakerState, MemberStatus, RoundSummary, RunInfo } from '../services/coordinator/index.ts';
import type { OpenRound } from '../services/federation-log/index.ts';
import { bytesToHex } from '../versions/index.ts';

/** A run as lists show it (counts, no rounds). */
export function runJson(run: RunInfo) {
  return {
    id: run.id,
    label: run.label,
    rounds: run.rounds,
    untilRound: run.untilRound,
    state: run.state,
    startedBy: run.startedBy,
    startedUnixMs: run.startedUnixMs,
    stoppedBy: run.stoppedBy,
    endedUnixMs: run.endedUnixMs,
    decided: run.decided,
    committed: run.committed,
    aborted: run.aborted,
  };
}

/** The circuit breaker as the status shows it (docs/round-protocol.md, "Circuit breaker"). */
export function breakerJson(b: BreakerState) {
  return {
    enabled: b.enabled,
    level: b.level,
    state: b.name,
    share: b.share,
    rounds: b.rounds,
    failing: [...b.failing],
    probing: b.probing,
    changedUnixMs: b.changedAtMs,
    probeUnixMs: b.probeAtMs,
  };
}

/** A round summary without the evaluation (the versions routes show it with the commit). */
export function summaryJson(s: RoundSummary) {
  return {
    round: s.round,
    kind: s.kind,
    commit: s.commit,
    reason: s.reason,
    contributors: s.contributors,
    participants: s.participants,
    commitHash: s.commitHash ?? null,
    height: s.height,
    logSequence: s.logSequence,
    aggregateBytes: s.aggregateBytes,
    uploadBytes: s.uploadBytes,
    durationMs: s.durationMs,
    noVoters: [...s.noVoters],
    missing: [...s.missing],
  };
}

/** A run with its rounds, the sites each round summed (from the log) and its duration. */
export function runDetailJson(run: RunInfo, timeline: FederationTimeline) {
  const end = run.endedUnixMs;
  return {
    ...runJson(run),
    durationMs: end === null ? null : end - run.startedUnixMs,
    roundsDecided: run.summaries.map((s) => ({
      ...summaryJson(s),
      contributorSites: (timeline.history.decisionOf(s.round)?.decision.aggregate?.contributors ?? []).map(
        (c) => c.site,
      ),
    })),
  };
}

/** A decided round as the log holds it. */
export function decidedRoundJson(r: TimelineRound) {
  const d = r.decision;
  return {
    round: r.round,
    kind: r.open.kind === 'statistics' ? 'statistics' : d.rollbackTarget.length > 0 ? 'rollback' : 'round',
    status: d.commit ? ('commit' as const) : ('abort' as const),
    reason: d.reason,
    baseHeight: r.open.version,
    height: d.height,
    commitHash: d.commit ? bytesToHex(d.commitHash) : null,
    participants: r.open.assignments.map((a) => a.site),
    contributors: (d.aggregate?.contributors ?? []).map((c) => c.site),
    voters: [...d.voters],
    missing: [...d.missing],
    openSequence: r.openSequence,
    sequence: r.sequence,
    deadlineUnixMs: r.open.deadlineUnixMs,
    decidedUnixMs: r.unixMs,
    evaluation: evaluationJson(d.evaluation),
  };
}

/** A decision's federated evaluation, totals only (the confusion matrix is in `versions show`). */
function evaluationJson(e: EvaluationBody | null) {
  return e == null
    ? null
    : { model: bytesToHex(e.model), examples: e.examples, correct: e.correct, lossSum: e.lossSum };
}

/**
 * The RoundOpen's assignments: who takes part, through which aggregator, with what weight, and
 * where that aggregator sends its partial (`aggregatorParent`: the parent aggregator RoundOpen's
 * `parents` names in a tree deeper than one level, `''` for the coordinator).
 */
export function assignmentsJson(open: ControlBodies['round-open']) {
  const parentOf = new Map((open.parents ?? []).map((l) => [l.aggregator, l.parent]));
  return open.assignments.map((a) => ({
    site: a.site,
    aggregator: a.aggregator,
    examples: a.examples,
    aggregatorParent: parentOf.get(a.aggregator) ?? '',
  }));
}

/** The round open in the log (not decided yet). */
export function openRoundJson(o: OpenRound) {
  const open = o.roundOpen;
  return {
    round: open.round,
    kind: open.kind === 'statistics' ? 'statistics' : open.assignments.length === 0 ? 'rollback' : 'round',
    status: 'open' as const,
    reason: '',
    baseHeight: open.version,
    height: open.version,
    commitHash: null,
    participants: open.assignments.map((a) => a.site),
    contributors: [],
    voters: [],
    missing: [],
    openSequence: o.entry.sequence,
    sequence: null,
    deadlineUnixMs: open.deadlineUnixMs,
    decidedUnixMs: null,
    evaluation: null,
  };
}

/** Rounds newest first: the open one (if any), then decided ones, at most `limit`. */
export function loggedRounds(timeline: FederationTimeline, limit: number) {
  const out: ReturnType<typeof decidedRoundJson | typeof openRoundJson>[] = [];
  const open = timeline.history.openRound;
  if (open !== null) out.push(openRoundJson(open));
  const decided = timeline.rounds;
  for (let i = decided.length - 1; i >= 0 && out.length < limit; i--) out.push(decidedRoundJson(decided[i]!));
  return out.slice(0, limit);
}

/** A member with the last commit that summed its update (sites), from the log. */
export function memberJson(m: MemberStatus, timeline: FederationTimeline) {
  let lastContribution = null;
  if (m.role === 'site') {
    const decided = timeline.rounds;
    for (let i = decided.length - 1; i >= 0; i--) {
      const r = decided[i]!;
      if (r.decision.commit && r.decision.aggregate?.contributors.some((c) => c.site === m.id)) {
        lastContribution = {
          round: r.round,
          height: r.decision.height,
          commitHash: bytesToHex(r.decision.commitHash),
          unixMs: r.unixMs,
        };
        break;
      }
    }
  }
  return { ...m, lastContribution };
}
