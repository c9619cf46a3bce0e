import { randomBytes } from 'node:crypto';
import {
  type AggregateInfo,
  type Assignment,
  ATTEMPT_BYTES,
  type ControlBodies,
  type CulpritRecord,
  codecEncoding,
  type RoundContext,
  RoundTree,
  sealControl,
  statisticsLaneCount,
} from '../../protocol/index.ts';
import {
  aggregateDigest,
  encodeAggregateObject,
  encodeRoundParams,
  PartialIntake,
  type RoundRobust,
} from '../../round/index.ts';
import { assignBounded, createRing } from '../../tree/index.ts';
import { bytesToHex, createCommit, ZERO_HASH } from '../../versions/index.ts';
import { failpoint } from '../failpoint.ts';
import type { ChainCommit } from '../federation-log/index.ts';
import { nextRoundPrivacy } from '../privacy-plan.ts';
import { serviceRobustRule } from '../robust-plan.ts';
import { contractFeatureCount, federatedStandardization, statisticsCommitAt } from '../statistics-plan.ts';
import { buildAggregationTree, treeLinks } from './aggregation-tree.ts';
import { droppedUpdates } from './dropped-updates.ts';
import type { RoundSummary } from './events.ts';
import { findCulprits } from './fault-finder.ts';
import { robustStep } from './robust-round.ts';
import { decide, noVotes, type RoundFacts } from './round-decision.ts';
import { type ActiveRound, type RoundHost, votingRound } from './round-host.ts';
import { judgeVotes, type Verdict } from './round-judge.ts';
import { cappedWeights } from './weight-cap.ts';

const EMPTY = new Uint8Array(0);

/**
 * Largest aggregate (stored bytes) sent inside PREPARE; a larger one is sent by reference (sites
 * read it from the aggregates store). 8 MiB: the 2NN's 2.2 MB aggregate goes inline (one fewer
 * round trip per site), a 10M-parameter model's ≈ 107 MB goes by reference.
 */
export const INLINE_AGGREGATE_BYTES = 8 * 1024 * 1024;

/**
 * Waits until a round can open: at least one eligible site (live, at the head, not excluded)
 * and, for a training round, one live aggregator; and until the sites expected to switch to the
 * last commit did (or `switchWaitMs` passed), so they are at the head when the round opens.
 * Readmits excluded sites that qualify. Returns the eligible sites, or undefined when stopped.
 */
async function waitForSites(
  host: RoundHost,
  round: number,
  aggregators: boolean,
): Promise<string[] | undefined> {
  const head = host.log.history.head;
  const headRef = { hash: head.commit.hash, height: head.commit.height };
  const settleBy = host.now() + (host.options.switchWaitMs ?? 2000);
  const lastRound = head.commit.round;
  const ready = await host.until(() => {
    for (const site of host.membership.readmitQualified(headRef, round))
      host.emit({ type: 'readmitted', member: site });
    for (const aggregator of host.membership.readmitAggregators(round))
      host.emit({ type: 'readmitted', member: aggregator });
    if (aggregators && host.membership.usableAggregators().length === 0) return false;
    if (host.membership.eligibleSites(headRef).length === 0) return false;
    // A site whose heartbeat already reports the head has switched, even without a `switched` to
    // this coordinator (it switched before a restart, which re-announces the last decision).
    return (
      host.now() >= settleBy ||
      host.switches.allSwitched(
        lastRound,
        (s) => host.membership.isLive(s) && !host.membership.atHead(s, headRef),
      )
    );
  }, Number.POSITIVE_INFINITY);
  if (!ready) return undefined;
  return host.membership.eligibleSites(headRef);
}

/** Appends the round's RoundOpen to the log (before anyone hears of it). */
async function logOpen(host: RoundHost, open: ControlBodies['round-open']): Promise<void> {
  await host.log.append({ roundOpen: open });
}

/**
 * One training round (docs/round-protocol.md steps 1, 4, 6): open (logged, then announced),
 * collect partials until every assigned aggregator delivered or failed or the deadline (+ grace)
 * passed, store the aggregate, PREPARE, collect votes, decide. Undefined when stopped before the
 * decision (the round then stays open in the log; a restart aborts it).
 */
export async function runTrainingRound(host: RoundHost, round: number): Promise<RoundSummary | undefined> {
  const { ctx } = host;
  const cfg = ctx.config;
  host.setPhase('waiting');
  let sites = await waitForSites(host, round, true);
  if (sites === undefined) return undefined;
  // The circuit breaker (docs/round-protocol.md): from level 1, sites that failed lately sit out.
  const cohort = host.breaker.cohort(sites, cfg.round.minContributors);
  if (cohort.short) {
    const why = `leaving out the failing sites would leave fewer than round.minContributors (${cfg.round.minContributors})`;
    host.breakerChanged(host.breaker.escalate(round, why, host.now()));
    if (host.breaker.level === 3) return undefined; // frozen: this round does not open
  } else if (cohort.leftOut.length > 0) {
    ctx.log.info({ round, leftOut: cohort.leftOut }, 'circuit breaker leaves failing sites out');
  }
  sites = [...cohort.sites];
  // Sites suspected of spoiling earlier aggregates take part by halves until one is isolated.
  const suspected = host.suspects.suspects;
  const taking = host.suspects.cohort(sites, round, cfg.round.minContributors);
  if (suspected.length > 0) {
    const sitting = suspected.filter((s) => !taking.includes(s));
    ctx.log.info({ round, suspects: suspected, sitting }, 'suspected sites take part by halves');
  }
  sites = taking;
  const started = host.now();
  const head = host.log.history.head.commit;
  // An aggregator found at fault sits out (its sites go to the others on the ring).
  const aggregators = host.membership.usableAggregators();
  if (sites.length > cfg.codec.maxContributors) {
    ctx.log.warn(
      { round, sites: sites.length, maxContributors: cfg.codec.maxContributors },
      'more eligible sites than codec.maxContributors; the rest sit this round out',
    );
    sites = sites.slice(0, cfg.codec.maxContributors);
  }
  const capacity = new Map(cfg.members!.aggregators.map((a) => [a.id, a.capacity]));
  const ring = createRing(aggregators.map((id) => ({ id, capacity: capacity.get(id) ?? 1 })));
  const assignment = assignBounded(ring, sites, cfg.round.epsilon);
  // Each site's weight is pinned here, capped at a multiple of the round's median: its update must
  // declare exactly this many examples.
  const weights = cappedWeights(
    new Map(sites.map((s) => [s, host.membership.view(s)?.examples ?? 0])),
    cfg.round.weightCapFactor,
  );
  const assignments: Assignment[] = [...assignment]
    .map(([site, aggregator]) => ({ site, aggregator, examples: weights.get(site) ?? 0 }))
    .sort((a, b) => (a.site < b.site ? -1 : a.site > b.site ? 1 : 0));
  const clip = Math.fround(host.clip);
  const totalExamples = assignments.reduce((n, a) => n + a.examples, 0);
  // Federated standardization: until the chain holds the federation's feature statistics, the
  // round gathers them instead of training.
  const statistics =
    federatedStandardization(cfg) && statisticsCommitAt(host.log.history, head.height) === undefined;
  // From breaker level 2 the round carries no optional work: no evaluation lanes, sites only train.
  const totalParams = statistics
    ? statisticsLaneCount(contractFeatureCount(cfg)!, cfg.codec.bits)
    : host.breaker.dropsOptionalWork
      ? host.requiredLanes
      : host.updateLength;
  const attempt = new Uint8Array(randomBytes(ATTEMPT_BYTES));
  const context: RoundContext = {
    federation: cfg.federation.id,
    round,
    baseCommit: head.hash,
    version: head.height,
  };
  const encoding = codecEncoding(ctx.ckks, {
    bits: cfg.codec.bits,
    clip,
    maxContributors: cfg.codec.maxContributors,
    crcChunkBytes: cfg.codec.crcChunkBytes,
  });
  const deadlineUnixMs = host.now() + cfg.round.deadlineMs;
  // More aggregators in use than the root's fan-in: some become parents of others (round.tree).
  const used = [...new Set(assignments.map((a) => a.aggregator))].sort();
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
    totalParams,
    attempt,
    kind: statistics ? 'statistics' : '',
    // Absent at one level: the RoundOpen is then byte-identical to one written before trees.
    ...(parents.length > 0 ? { parents } : {}),
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
    context,
    encoding,
    assignments,
    totalParams,
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

  // The top of the tree sends last: at one level that is the round's deadline.
  await host.until(() => intake.settled, tree.lastDeadlineUnixMs + (host.options.graceMs ?? 2000));
  intake.close();
  if (host.stopping()) {
    intake.builder.dispose();
    return undefined;
  }
  for (const [aggregator, why] of intake.failed)
    ctx.log.warn({ round, aggregator, why }, 'partial refused: round goes on without it');
  // An aggregator whose partial was refused or never came is struck like a silent voter (an honest
  // one sends nothing mostly when none of its sites delivered); the sites under it are not counted
  // as failing, since their own delivery cannot be seen. One whose partial is in a committed round
  // is credited like a YES voter, so a false strike costs one sit-out, not a doubling series.
  const unserving = intake
    .undelivered('sent no partial')
    .map(({ child, why }) => ({ aggregator: child, why }))
    .sort((a, b) => (a.aggregator < b.aggregator ? -1 : 1));
  const unservedBy = new Set(unserving.map((u) => u.aggregator));
  const unserved = assignments
    .filter((a) => unservedBy.has(tree.childTowards('', a.aggregator) ?? ''))
    .map((a) => a.site);
  // The evidence of the sum, before anyone sees it (docs/log-format.md, "PartialRecord").
  try {
    for (const p of intake.accepted) {
      await host.log.append({ partial: { round, attempt, aggregator: p.aggregator, manifest: p.manifest } });
    }
  } catch (err) {
    intake.builder.dispose();
    throw err;
  }
  failpoint('coordinator.partials-logged', round);
  // A statistics commit's params are the sums the sites decrypt: they come with the YES votes.
  // With privacy the commit records what the federation has spent once it commits (every site
  // recomputes it and votes NO on any other figure).
  const privacy = statistics ? null : host.budget.privacy;
  const paramsWith = (robust?: RoundRobust) =>
    encodeRoundParams({
      round,
      bits: cfg.codec.bits,
      clip,
      strategy: cfg.learning.strategy,
      learningRate: cfg.learning.learningRate,
      ...(privacy === null
        ? {}
        : {
            privacy: nextRoundPrivacy(privacy, host.budget.spent(), Math.max(1, intake.builder.contributors)),
          }),
      ...(robust === undefined ? {} : { robust }),
    });
  let params = statistics ? EMPTY : paramsWith();
  const base = {
    round,
    kind: statistics ? ('statistics' as const) : ('round' as const),
    participants: assignments.length,
    started,
    params,
    rollbackTarget: EMPTY,
    assigned: assignments.map((a) => a.site),
    unserving,
    unserved,
    served: [...intake.delivered].sort(),
  };
  const minimum = cfg.round.minContributors;
  if (intake.builder.contributors < minimum) {
    const k = intake.builder.contributors;
    intake.builder.dispose();
    const contributed = intake.accepted.flatMap((p) => p.sites.map((c) => c.site));
    const facts = { ...base, contributors: k, digest: EMPTY, aggregate: null, contributed };
    const why =
      k === 0
        ? 'no contributions'
        : `${k} contribution(s), round.minContributors is ${minimum}: an aggregate this small would show individual updates`;
    return decide(host, state, facts, noVotes(why));
  }
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
    participants: assignments.length,
    totalExamples,
    object: objectName,
    objectBytes: object.length,
  };
  let facts: RoundFacts = {
    ...base,
    contributors: aggregate.contributors,
    digest,
    aggregate: info,
    contributed: contributors.map((c) => c.site),
  };
  try {
    await (await host.aggregates()).put(objectName, object);
  } catch (err) {
    ctx.log.error({ round, err }, 'cannot store the aggregate');
    return decide(host, state, facts, noVotes(`cannot store the aggregate: ${(err as Error).message}`));
  }
  // `plain` mode with a robust rule: the coordinator reads every update and the commit records Δ̄.
  const rule = statistics ? null : serviceRobustRule(cfg);
  if (rule !== null) {
    const step = await robustStep(host, { open, encoding, partials: intake.accepted, rule });
    if ('failed' in step) {
      ctx.log.error({ round, why: step.failed, culprit: step.culprit?.member }, 'robust aggregation failed');
      const culprits = step.culprit === undefined ? [] : [step.culprit];
      return decide(host, state, { ...facts, culprits }, noVotes(step.failed));
    }
    params = paramsWith(step.record);
    facts = { ...facts, params };
  }
  const prepare: ControlBodies['prepare'] = {
    federation: cfg.federation.id,
    round,
    version: head.height,
    baseCommit: head.hash,
    aggregateDigest: digest,
    contributors,
    totalWeight: aggregate.totalWeight,
    participants: assignments.length,
    totalExamples,
    encoding: aggregate.encoding,
    totalParams: aggregate.totalParams,
    // Small aggregates travel inside PREPARE; large ones (a frame holds at most 64 MiB) by reference.
    ciphertexts: object.length <= INLINE_AGGREGATE_BYTES ? [...aggregate.ciphertexts] : [],
    params,
    kind: statistics ? 'statistics' : 'round',
    rollbackTarget: EMPTY,
    aggregateObject: object.length <= INLINE_AGGREGATE_BYTES ? '' : objectName,
    attempt,
  };
  host.emit({
    type: 'prepare',
    round,
    contributors: aggregate.contributors,
    aggregateDigest: bytesToHex(digest),
    bytes: object.length,
  });
  const verdict = await collectVotes(host, state, prepare);
  if (verdict === undefined) return undefined;
  // NO votes proving their aggregator dropped the voter's update: it is struck, they are not.
  const dropped = droppedUpdates({
    open,
    votes: state.votes,
    no: verdict.no,
    partials: intake.accepted,
    keys: (id) => ctx.keys(id),
  });
  const culprits = verdict.aggregateFault
    ? await blame(host, { open, encoding, partials: intake.accepted, evidenceKept })
    : [];
  facts = { ...facts, culprits: [...culprits, ...dropped.culprits], excused: dropped.excused };
  return decide(host, state, facts, verdict);
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
  const verdict = await collectVotes(host, state, prepare);
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
): Promise<Verdict | undefined> {
  // The commit every YES must name, for the H(w′) it names: PREPARE's fields bind the rest. A
  // statistics commit keeps the head's model and carries the sums the voters decrypted.
  const { ctx } = host;
  const head = host.log.history.head.commit;
  const rollback = prepare.kind === 'rollback';
  const statistics = prepare.kind === 'statistics';
  const expectedCommit = (modelHash: Uint8Array, voted: Uint8Array) =>
    createCommit({
      parent: prepare.baseCommit,
      height: prepare.version + 1,
      round: prepare.round,
      aggregateDigest: rollback ? ZERO_HASH : prepare.aggregateDigest,
      modelHash: statistics ? head.modelHash : modelHash,
      params: statistics ? voted : prepare.params,
      kind: rollback ? 'rollback' : statistics ? 'statistics' : 'round',
    }).hash;
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
