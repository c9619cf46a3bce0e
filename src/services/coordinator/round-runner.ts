import { randomBytes } from 'node:crypto';
import {
  type AggregateInfo,
  type Assignment,
  ATTEMPT_BYTES,
  type ControlBodies,
  type CulpritRecord,
  codecEncoding,
  type Encoding,
  RoundTree,
  sealControl,
} from '../../protocol/index.ts';
import { aggregateDigest, encodeAggregateObject, PartialIntake } from '../../round/index.ts';
import { bytesToHex } from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import type { ChainCommit } from '../federation-log/index.ts';
import { buildAggregationTree, treeLinks } from './aggregation-tree.ts';
import { droppedUpdates } from './dropped-updates.ts';
import type { RoundSummary } from './events.ts';
import { findCulprits } from './fault-finder.ts';
import { aggregatorCapacity, trainingCohort, waitForSites } from './round-cohort.ts';
import { decide, noVotes, type RoundFacts } from './round-decision.ts';
import { type ActiveRound, type RoundHost, votingRound } from './round-host.ts';
import { judgeVotes, type Verdict } from './round-judge.ts';
import { type AggregatePlan, nextAggregatePlan, rollbackPlan, type VotePlan } from './round-plan.ts';
import { collectShares, invalidShares } from './share-collection.ts';

const EMPTY = new Uint8Array(0);

/**
 * Largest aggregate (stored bytes) sent inside PREPARE; a larger one is sent by reference (sites
 * read it from the aggregates store). 8 MiB: the 2NN's 2.2 MB aggregate goes inline (one fewer
 * round trip per site), a 10M-parameter model's ≈ 107 MB goes by reference.
 */
export const INLINE_AGGREGATE_BYTES = 8 * 1024 * 1024;

/**
 * One round that sums site updates, training or statistics (docs/round-lifecycle.md): choose the
 * cohort, open the round (logged, then announced), collect partials until every aggregator at the
 * top of the tree delivered or failed or the deadline (+ grace) passed, store the aggregate, let
 * the round's plan settle it, PREPARE, collect votes, decide. Undefined when stopped before the
 * decision (the round then stays open in the log; a restart aborts it).
 */
export async function runTrainingRound(host: RoundHost, round: number): Promise<RoundSummary | undefined> {
  host.setPhase('waiting');
  const assignments = await trainingCohort(host, round);
  if (assignments === undefined) return undefined;
  const started = host.now();
  const clip = Math.fround(host.clip);
  const plan = nextAggregatePlan(host, round, clip);
  const opened = await openRound(host, { round, clip, plan, assignments });
  const { open, intake, state } = opened;
  await awaitPartials(host, opened);
  intake.close();
  if (host.stopping()) {
    intake.builder.dispose();
    return undefined;
  }
  const base: RoundFacts = {
    ...(await closeIntake(host, opened)),
    round,
    kind: plan.kind,
    participants: assignments.length,
    started,
    params: plan.params(intake.builder.contributors),
    rollbackTarget: EMPTY,
    contributors: intake.builder.contributors,
    digest: EMPTY,
    aggregate: null,
    contributed: intake.accepted.flatMap((p) => p.sites.map((c) => c.site)),
  };
  const minimum = host.ctx.config.round.minContributors;
  if (base.contributors < minimum) {
    intake.builder.dispose();
    const k = base.contributors;
    const why =
      k === 0
        ? 'no contributions'
        : `${k} contribution(s), round.minContributors is ${minimum}: an aggregate this small would show individual updates`;
    return decide(host, state, base, noVotes(why));
  }
  const stored = await storeAggregate(host, opened, base);
  if ('failed' in stored) return decide(host, state, stored.facts, noVotes(stored.failed));
  const settled = await plan.settle({
    open,
    encoding: opened.encoding,
    partials: intake.accepted,
    contributors: stored.facts.contributors,
  });
  if ('failed' in settled) {
    host.ctx.log.error(
      { round, why: settled.failed, culprit: settled.culprit?.member },
      'the aggregate cannot be settled',
    );
    const culprits = settled.culprit === undefined ? [] : [settled.culprit];
    return decide(host, state, { ...stored.facts, culprits }, noVotes(settled.failed));
  }
  const facts = { ...stored.facts, params: settled.params };
  // Threshold keys: the decrypting set's shares are stored beside the aggregate before PREPARE.
  if (host.threshold !== undefined && facts.aggregate !== null) {
    const aggregate = { info: facts.aggregate, digest: facts.digest, blocks: stored.blocks };
    const shared = await collectShares(host, state, aggregate, opened.open);
    if (shared === undefined) return undefined;
    if ('failed' in shared)
      return decide(host, state, facts, { ...noVotes(shared.failed), missing: shared.silent });
  }
  host.emit({
    type: 'prepare',
    round,
    contributors: facts.contributors,
    aggregateDigest: bytesToHex(facts.digest),
    bytes: facts.aggregate?.objectBytes ?? 0,
  });
  const verdict = await collectVotes(host, state, { ...stored.prepare, params: settled.params }, plan);
  if (verdict === undefined) return undefined;
  // NO votes proving their aggregator dropped the voter's update: it is struck, they are not.
  const dropped = droppedUpdates({
    open,
    votes: state.votes,
    no: verdict.no,
    partials: intake.accepted,
    keys: (id) => host.ctx.keys(id),
  });
  // A decrypter whose bundle most voters could not open is struck, not the voters it misled.
  const badShares = invalidShares(state, [...verdict.yes, ...verdict.no]);
  const culprits = verdict.aggregateFault
    ? await blame(host, {
        open,
        encoding: opened.encoding,
        partials: intake.accepted,
        evidenceKept: opened.evidenceKept,
      })
    : [];
  return decide(
    host,
    state,
    {
      ...facts,
      culprits: [...culprits, ...dropped.culprits, ...badShares.culprits],
      excused: [...dropped.excused, ...badShares.excused],
    },
    verdict,
  );
}

/** A round just opened: what it announced, the intake of its partials, its state for the handlers. */
interface OpenedRound {
  readonly open: ControlBodies['round-open'];
  readonly encoding: Encoding;
  readonly tree: RoundTree;
  readonly intake: PartialIntake;
  readonly state: ActiveRound;
  /** Whether the contributions stream exists, so what the aggregators sum is kept as evidence. */
  readonly evidenceKept: boolean;
}

/**
 * Opens round `round` of `plan` for `assignments` with `clip`: builds the RoundOpen (deadline, clip, the
 * plan's lanes and kind, the aggregation tree when one level is not enough), makes sure the
 * contributions stream exists, logs the RoundOpen (before anyone hears of it), starts the intake
 * of partials and announces the round.
 */
async function openRound(
  host: RoundHost,
  {
    round,
    clip,
    plan,
    assignments,
  }: { round: number; clip: number; plan: AggregatePlan; assignments: Assignment[] },
): Promise<OpenedRound> {
  const { ctx } = host;
  const cfg = ctx.config;
  const head = host.log.history.head.commit;
  const totalExamples = assignments.reduce((n, a) => n + a.examples, 0);
  const attempt = new Uint8Array(randomBytes(ATTEMPT_BYTES));
  const encoding = codecEncoding(ctx.ckks, {
    bits: cfg.codec.bits,
    clip,
    maxContributors: cfg.codec.maxContributors,
    crcChunkBytes: cfg.codec.crcChunkBytes,
  });
  const deadlineUnixMs = host.now() + cfg.round.deadlineMs;
  // More aggregators in use than the root's fan-in: some become parents of others (round.tree).
  const used = [...new Set(assignments.map((a) => a.aggregator))].sort();
  const capacity = aggregatorCapacity(host);
  const parents = treeLinks(
    buildAggregationTree(
      used.map((id) => ({ id, capacity: capacity.get(id) ?? 1 })),
      cfg.round.tree,
    ),
    deadlineUnixMs,
    cfg.round.tree.levelWaitMs,
  );
  const open: ControlBodies['round-open'] = {
    federation: cfg.federation.id,
    round,
    version: head.height,
    baseCommit: head.hash,
    assignments,
    bits: cfg.codec.bits,
    clip,
    maxContributors: cfg.codec.maxContributors,
    crcChunkBytes: cfg.codec.crcChunkBytes,
    deadlineUnixMs,
    totalExamples,
    totalParams: plan.lanes,
    attempt,
    kind: plan.openKind,
    // Absent at one level: the RoundOpen is then byte-identical to one written before trees.
    ...(parents.length > 0 ? { parents } : {}),
    // Threshold keys: the epoch sites encrypt under (a site behind on the log reads it first).
    ...(host.threshold === undefined ? {} : { epochId: host.threshold.epochId }),
  };
  const tree = RoundTree.of(open);
  // Without the contributions stream nothing the aggregators sum is kept as evidence, and no one
  // can be blamed for a contribution missing from it.
  let evidenceKept = true;
  try {
    await host.ensureUpdatesStore();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'STREAM_MISMATCH' || code === 'CONTRIBUTION_FRAME_TOO_LARGE') throw err;
    evidenceKept = false;
    ctx.log.error(
      { round, err },
      'cannot create the contributions stream: aggregators cannot keep contributions',
    );
  }
  await logOpen(host, open);
  failpoint('coordinator.round-open-logged', round);
  const intake = new PartialIntake({
    ckks: ctx.ckks,
    context: { federation: cfg.federation.id, round, baseCommit: head.hash, version: head.height },
    encoding,
    assignments,
    totalParams: plan.lanes,
    keys: (id) => ctx.keys(id),
    allowedAlgorithms: cfg.crypto.signature.allowed,
    timings: host.options.cryptoTimings,
    tree,
  });
  const state: ActiveRound = {
    round,
    attempt,
    intake,
    phase: 'collecting',
    shares: new Map(),
    votes: new Map(),
    envelopes: new Map(),
  };
  host.current = state;
  host.setPhase('collecting');
  try {
    await ctx.transport.publish(
      ctx.subjects.roundOpen,
      sealControl('round-open', open, ctx.member, ctx.signing),
    );
  } catch (err) {
    ctx.log.error({ round, err }, 'round open logged but not announced');
  }
  host.emit({ type: 'round-open', round, assignments, clip, totalExamples, deadlineUnixMs });
  ctx.log.info(
    {
      round,
      sites: assignments.length,
      aggregators: used.length,
      ...(tree.levels > 1 ? { levels: tree.levels, topAggregators: intake.aggregators.size } : {}),
      clip,
    },
    'round open',
  );
  return { open, encoding, tree, intake, state, evidenceKept };
}

/**
 * Waits until every aggregator at the top of the tree delivered its partial or failed, or the cut
 * passes. The top of the tree sends last (at one level, at the round's deadline), on its own clock:
 * the cut is that deadline plus the grace (`graceMs`, 2 s), plus how far the slowest pending
 * aggregator's clock ran behind this one at its last heartbeat (at most `round.clockSkewMs`). Past
 * the cut, an aggregator still heartbeating is still closing (a large sum to sign on a loaded
 * host): it is awaited up to `round.voteTimeoutMs` more, while it stays live. One that never sends
 * costs the round that wait once, and is struck as serving nothing.
 */
async function awaitPartials(host: RoundHost, { intake, tree }: OpenedRound): Promise<void> {
  const round = host.ctx.config.round;
  const pending = () =>
    intake
      .undelivered('')
      .map((u) => u.child)
      .filter((a) => !intake.failed.has(a));
  const lag = Math.min(round.clockSkewMs, Math.max(0, ...pending().map((a) => host.membership.clockLag(a))));
  await host.until(() => intake.settled, tree.lastDeadlineUnixMs + (host.options.graceMs ?? 2000) + lag);
  if (intake.settled || host.stopping()) return;
  const live = () => pending().some((a) => host.membership.isLive(a));
  if (live()) await host.until(() => intake.settled || !live(), host.now() + round.voteTimeoutMs);
}

/**
 * After the intake closed: names the aggregators that served and those that did not (struck like
 * a silent voter) with the sites under them, and logs each accepted partial's manifest, the
 * evidence of the sum, before anyone sees it (docs/log-format.md, "PartialRecord").
 */
async function closeIntake(
  host: RoundHost,
  { open, tree, intake }: OpenedRound,
): Promise<Pick<RoundFacts, 'assigned' | 'unserving' | 'unserved' | 'served'>> {
  const round = open.round;
  for (const [aggregator, why] of intake.failed)
    host.ctx.log.warn({ round, aggregator, why }, 'partial refused: round goes on without it');
  // An aggregator whose partial was refused or never came is struck like a silent voter (an honest
  // one sends nothing mostly when none of its sites delivered); the sites under it are not counted
  // as failing, since their own delivery cannot be seen. One whose partial is in a committed round
  // is credited like a YES voter, so a false strike costs one sit-out, not a doubling series.
  const unserving = intake
    .undelivered('sent no partial')
    .map(({ child, why }) => ({ aggregator: child, why }))
    .sort((a, b) => (a.aggregator < b.aggregator ? -1 : 1));
  const unservedBy = new Set(unserving.map((u) => u.aggregator));
  const unserved = open.assignments
    .filter((a) => unservedBy.has(tree.childTowards('', a.aggregator) ?? ''))
    .map((a) => a.site);
  try {
    for (const p of intake.accepted) {
      await host.log.append({
        partial: { round, attempt: open.attempt, aggregator: p.aggregator, manifest: p.manifest },
      });
    }
  } catch (err) {
    intake.builder.dispose();
    throw err;
  }
  failpoint('coordinator.partials-logged', round);
  return {
    assigned: open.assignments.map((a) => a.site),
    unserving,
    unserved,
    served: [...intake.delivered].sort(),
  };
}

/**
 * Finishes the sum and stores it (write-once, `round-<n>`) in the aggregates store; returns the
 * round's facts with the aggregate and the PREPARE that proposes it (small aggregates inside it,
 * larger ones by reference), or why the round fails.
 */
async function storeAggregate(
  host: RoundHost,
  { open, intake }: OpenedRound,
  base: RoundFacts,
): Promise<
  | { readonly facts: RoundFacts; readonly prepare: ControlBodies['prepare']; readonly blocks: number }
  | { readonly facts: RoundFacts; readonly failed: string }
> {
  const round = open.round;
  const aggregate = intake.builder.finish();
  const object = encodeAggregateObject(aggregate.ciphertexts);
  const digest = aggregateDigest(aggregate.ciphertexts);
  const contributors = [...aggregate.sites].sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
  const objectName = `round-${round}`;
  const info: AggregateInfo = {
    encoding: aggregate.encoding,
    totalParams: aggregate.totalParams,
    contributors,
    totalWeight: aggregate.totalWeight,
    participants: open.assignments.length,
    totalExamples: open.totalExamples,
    object: objectName,
    objectBytes: object.length,
  };
  const facts: RoundFacts = {
    ...base,
    contributors: aggregate.contributors,
    digest,
    aggregate: info,
    contributed: contributors.map((c) => c.site),
  };
  try {
    await (await host.aggregates()).put(objectName, object);
  } catch (err) {
    host.ctx.log.error({ round, err }, 'cannot store the aggregate');
    return { facts, failed: `cannot store the aggregate: ${(err as Error).message}` };
  }
  const inline = object.length <= INLINE_AGGREGATE_BYTES;
  const prepare: ControlBodies['prepare'] = {
    federation: open.federation,
    round,
    version: open.version,
    baseCommit: open.baseCommit,
    aggregateDigest: digest,
    contributors,
    totalWeight: aggregate.totalWeight,
    participants: open.assignments.length,
    totalExamples: open.totalExamples,
    encoding: aggregate.encoding,
    totalParams: aggregate.totalParams,
    // Small aggregates travel inside PREPARE; large ones (a frame holds at most 64 MiB) by reference.
    ciphertexts: inline ? [...aggregate.ciphertexts] : [],
    params: base.params,
    kind: base.kind,
    rollbackTarget: EMPTY,
    aggregateObject: inline ? '' : objectName,
    attempt: open.attempt,
  };
  return { facts, prepare, blocks: aggregate.ciphertexts.length };
}

/** Appends the round's RoundOpen to the log (before anyone hears of it). */
async function logOpen(host: RoundHost, open: ControlBodies['round-open']): Promise<void> {
  await host.log.append({ roundOpen: open });
}

/**
 * Who spoiled an aggregate every voter found wrong: an aggregator whose partial is not the sum of
 * what it lists, or that did not keep what it summed (`findCulprits`); when every partial is
 * exact, one of the contributors wrote a wrong tag, and the suspects narrow to it over rounds
 * (`SuspectSet`). Returns the culprits to strike (none while the suspects are more than one).
 */
async function blame(host: RoundHost, input: Parameters<typeof findCulprits>[1]): Promise<CulpritRecord[]> {
  const { ctx } = host;
  const round = input.open.round;
  const findings = await findCulprits(host, input);
  for (const c of findings.culprits) {
    ctx.log.warn(
      { round, culprit: c.member, fault: c.fault, detail: c.detail, evidence: c.evidence },
      'culprit found',
    );
  }
  if (findings.culprits.length > 0 || !findings.exact) return [...findings.culprits];
  const contributors = input.partials.flatMap((p) => p.sites.map((c) => c.site));
  const isolated = host.suspects.fault(round, contributors);
  if (isolated === undefined) {
    ctx.log.warn(
      { round, suspects: host.suspects.suspects },
      'every partial is the exact sum of its contributions: a contributor wrote a wrong tag; its suspects take part by halves',
    );
    return [];
  }
  ctx.log.warn({ round, culprit: isolated }, 'culprit isolated: the one site in every spoiled aggregate');
  return [
    {
      member: isolated,
      role: 'site',
      fault: 'ISOLATED',
      detail: `the one site common to the contributors of every round whose aggregate a contribution spoiled, up to round ${round}`,
      evidence: '',
    },
  ];
}

/**
 * A rollback round (docs/round-protocol.md, "Rollback"): a new commit whose model is `target`'s,
 * decided by the same 2PC. The round is logged as opened (no assignments), every eligible site
 * prepares the target's model and votes, and the decision records the target.
 */
export async function runRollbackRound(
  host: RoundHost,
  round: number,
  target: ChainCommit,
  reason: string,
): Promise<RoundSummary | undefined> {
  const { ctx } = host;
  const cfg = ctx.config;
  host.setPhase('waiting');
  const sites = await waitForSites(host, round, false);
  if (sites === undefined) return undefined;
  const started = host.now();
  const head = host.log.history.head.commit;
  const clip = Math.fround(host.clip);
  const attempt = new Uint8Array(randomBytes(ATTEMPT_BYTES));
  await logOpen(host, {
    federation: cfg.federation.id,
    round,
    version: head.height,
    baseCommit: head.hash,
    assignments: [],
    bits: cfg.codec.bits,
    clip,
    maxContributors: cfg.codec.maxContributors,
    crcChunkBytes: cfg.codec.crcChunkBytes,
    deadlineUnixMs: started,
    totalExamples: 0,
    totalParams: host.parameterCount,
    attempt,
  });
  const state: ActiveRound = votingRound(round, attempt);
  host.current = state;
  const params = target.commit.params;
  const prepare: ControlBodies['prepare'] = {
    federation: cfg.federation.id,
    round,
    version: head.height,
    baseCommit: head.hash,
    aggregateDigest: EMPTY,
    contributors: [],
    totalWeight: 0,
    participants: 0,
    totalExamples: 0,
    encoding: codecEncoding(ctx.ckks, {
      bits: cfg.codec.bits,
      clip,
      maxContributors: cfg.codec.maxContributors,
      crcChunkBytes: cfg.codec.crcChunkBytes,
    }),
    totalParams: host.parameterCount,
    ciphertexts: [],
    params,
    kind: 'rollback',
    rollbackTarget: target.commit.hash,
    aggregateObject: '',
    attempt,
  };
  ctx.log.info(
    { round, target: bytesToHex(target.commit.hash), height: target.commit.height, reason },
    'rollback round',
  );
  const verdict = await collectVotes(host, state, prepare, rollbackPlan);
  if (verdict === undefined) return undefined;
  const facts: RoundFacts = {
    round,
    kind: 'rollback',
    participants: 0,
    started,
    contributors: 0,
    digest: EMPTY,
    aggregate: null,
    params,
    rollbackTarget: target.commit.hash,
  };
  return decide(host, state, facts, verdict);
}

/** Publishes PREPARE, waits for the voters' votes (or `voteTimeoutMs`) and judges them against it. */
async function collectVotes(
  host: RoundHost,
  state: ActiveRound,
  prepare: ControlBodies['prepare'],
  plan: VotePlan,
): Promise<Verdict | undefined> {
  const { ctx } = host;
  const head = host.log.history.head.commit;
  const expectedCommit = (modelHash: Uint8Array, voted: Uint8Array) =>
    plan.expectedCommit(prepare, head, modelHash, voted);
  const voters = host.membership.eligibleSites({ hash: head.hash, height: head.height });
  state.phase = 'voting';
  host.setPhase('voting');
  try {
    await ctx.transport.publish(
      ctx.subjects.prepare,
      sealControl('prepare', prepare, ctx.member, ctx.signing),
    );
  } catch (err) {
    ctx.log.error({ round: state.round, err }, 'PREPARE not published');
  }
  failpoint('coordinator.prepare-sent', state.round);
  const timeout = ctx.config.round.voteTimeoutMs;
  await host.until(() => voters.every((v) => state.votes.has(v)), host.now() + timeout);
  if (host.stopping()) return undefined;
  return judgeVotes({ voters, votes: state.votes, expectedCommit, voteTimeoutMs: timeout });
}
