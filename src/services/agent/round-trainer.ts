import { bytesEqual } from '../../../crypto/digest/index.ts';
import { InvalidArgumentError } from '../../errors/index.ts';
import {
  type ControlBodies,
  encodeUpdate,
  evaluationLevels,
  RMS_BUCKETS,
  rmsLevels,
} from '../../protocol/index.ts';
import { bytesToHex, type Commit } from '../../versions/index.ts';
import { updatePlan } from '../evaluation-plan.ts';
import type { ServicePrivacy } from '../privacy-plan.ts';
import { serviceRobustRule } from '../robust-plan.ts';
import type { AgentCore } from './agent-core.ts';
import type { AgentSteps } from './agent-steps.ts';
import { trainLocally } from './local-training.ts';
import { privateLevels } from './private-update.ts';
import { replayProblem } from './round-attempt.ts';
import { ownEvaluation } from './site-evaluation.ts';
import { type SiteRows, siteRows } from './site-rows.ts';
import { sendStatistics, statisticsProblem } from './statistics-round.ts';
import { pinnedExamples, updateFraming, uploadUpdate } from './update-upload.ts';

/**
 * A RoundOpen (step 2): a candidate still prepared for an earlier round is settled from the log
 * first (its decision was logged before this round opened), a head behind the round's base
 * catches up; then, when the round names this site, it is READY at the base, holds its CKKS key
 * and the deadline has not passed, it trains and sends ({@link trainAndSend}) under the abort
 * signal `begin` hands out (aborted when PREPARE or the decision of the round arrives first).
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
    core.counters.replaysRefused++;
    log.warn({ reason: replay }, 'round-open refused');
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
  if (!bytesEqual(open.baseCommit, now.hash) || open.version !== now.height) {
    return skip(
      `base commit ${bytesToHex(open.baseCommit)} (height ${open.version}) is not my head ${bytesToHex(now.hash)} (height ${now.height})`,
    );
  }
  if (core.keyset === null || core.macKey === null) return skip(`cannot encrypt: ${core.keysetError}`);
  // The coordinator may pin less than the site has (a weight capped at a multiple of the round's
  // median), never more.
  if (!(assignment.examples > 0) || assignment.examples > core.examples) {
    return skip(`RoundOpen pins ${assignment.examples} examples for this site, it has ${core.examples}`);
  }
  if (Date.now() >= open.deadlineUnixMs) return skip('deadline already passed');
  if (open.kind === 'statistics') {
    const problem = statisticsProblem(core, open);
    if (problem !== undefined) return skip(problem);
    const sending = begin(open.round);
    try {
      await sendStatistics(core, open, assignment.aggregator, sending.signal);
    } finally {
      sending.done();
    }
    return;
  }
  if (siteRows(core, now.height) === null) return skip('the federation has no feature statistics yet');
  const plan = updatePlan(core.ctx.config, core.spec, open.bits);
  // A round without evaluation lanes (the coordinator's circuit breaker dropped optional work) only trains.
  if (open.totalParams !== plan.totalParams && open.totalParams !== plan.requiredLanes) {
    return skip(
      `RoundOpen pins ${open.totalParams} lanes, the model has ${plan.requiredLanes} lanes of parameters and RMS histogram` +
        (plan.evaluationLanes > 0 ? ` and ${plan.evaluationLanes} evaluation lanes` : ''),
    );
  }
  const training = begin(open.round);
  try {
    await trainAndSend(core, open, assignment.aggregator, training.signal);
  } finally {
    training.done();
  }
}

/**
 * With federated evaluation, this site's evaluation of the round's base model (its head) on its
 * own validation rows, as evaluation lanes for its update; none without.
 */
async function evaluationLanes(
  core: AgentCore,
  open: ControlBodies['round-open'],
  head: Commit,
  w: Float32Array,
  rows: SiteRows,
  signal: AbortSignal,
): Promise<Uint8Array | undefined> {
  const plan = updatePlan(core.ctx.config, core.spec, open.bits);
  if (plan.classes === null || open.totalParams !== plan.totalParams) return undefined;
  const own = await ownEvaluation(core.evaluation, head, w, rows, plan.classes, signal);
  core.counters.evaluationsSent++;
  core.counters.ownEvaluations = [
    ...core.counters.ownEvaluations.slice(-31),
    { model: bytesToHex(head.hash), evaluation: own },
  ];
  core.ctx.log.info(
    {
      round: open.round,
      model: bytesToHex(head.hash).slice(0, 12),
      examples: own.examples,
      accuracy: own.examples > 0 ? own.correct / own.examples : null,
      loss: own.examples > 0 ? own.lossSum / own.examples : null,
    },
    'own evaluation of the base model',
  );
  return evaluationLevels(own, open.bits);
}

/** Share of the round's window (RoundOpen → deadline) kept at least for quantizing and uploading. */
const MIN_UPLOAD_SHARE = 0.1;

/**
 * Step 2 of the round (docs/round-protocol.md): trains from the head (which is the round's base) on
 * the site's shard and sends u = (w_local − w) · n_k · m / N, quantized with error feedback,
 * encrypted and signed, to the assigned aggregator. Training stops early when `signal` aborts
 * (PREPARE or the decision of this round arrived: the update is no longer wanted) or at the round's
 * deadline minus the time the upload is expected to take (the last upload's, at least a tenth of
 * the window): the partly trained update is sent rather than none. The new residual is staged, not
 * made current: the round's decision settles it.
 */
export async function trainAndSend(
  core: AgentCore,
  open: ControlBodies['round-open'],
  aggregator: string,
  signal: AbortSignal,
): Promise<void> {
  const log = core.ctx.log.child({ round: open.round });
  const head = core.store.head()!;
  const window = open.deadlineUnixMs - Date.now();
  const margin = Math.max(core.lastUploadMs * 1.5, window * MIN_UPLOAD_SHARE);
  const stale = () => signal.aborted || Date.now() >= open.deadlineUnixMs;
  core.machine.transition('TRAINING', `RoundOpen r${open.round}`);
  try {
    const w = core.store.readModel(head);
    const t0 = performance.now();
    const rows = siteRows(core, head.height)!;
    const extraLevels = await evaluationLanes(core, open, head, w, rows, signal);
    const trained = await trainLocally(core, w, rows, open, signal, open.deadlineUnixMs - margin);
    core.counters.roundsTrained++;
    if (trained.stopped === 'aborted' || trained.steps === 0 || stale()) {
      core.machine.transition('READY', `round ${open.round}: training ${trained.stopped}, nothing sent`);
      return;
    }
    if (trained.stopped === 'deadline') {
      core.counters.trainingCut++;
      log.warn(
        { steps: trained.steps, samples: trained.samples },
        'training cut at the deadline; sending what it learned',
      );
    }
    const privacy = updatePlan(core.ctx.config, core.spec, open.bits).privacy;
    // u = (w_local − w) · n_k · m / N: the plain sum over the m sites is N/… times FedAvg's mean.
    // Under differential privacy every site weighs 1: a weight would scale its sensitivity. A robust
    // rule weighs every update alike too: a hostile site could claim any example count.
    const m = open.assignments.length;
    const weighted = privacy === null && serviceRobustRule(core.ctx.config) === null;
    const examples = pinnedExamples(core, open);
    const scale = weighted ? (examples * m) / open.totalExamples : 1;
    if (!(scale > 0) || !Number.isFinite(scale)) {
      throw new InvalidArgumentError(
        `RoundOpen totalExamples ${open.totalExamples} cannot weigh ${examples} examples over ${m} sites`,
      );
    }
    const update = new Float32Array(w.length);
    let squares = 0;
    for (let i = 0; i < update.length; i++) {
      update[i] = (trained.parameters[i]! - w[i]!) * scale;
      squares += update[i]! * update[i]!;
    }
    // With privacy no RMS leaves the site, not even its histogram bucket: it is a figure of the
    // unnoised update (the histogram lanes stay empty, and the clip stays as it is).
    const rms = privacy === null ? Math.sqrt(squares / Math.max(1, update.length)) : 0;
    const histogram = privacy === null ? rmsLevels(rms, open.clip) : new Uint8Array(RMS_BUCKETS);
    const extra = new Uint8Array(histogram.length + (extraLevels?.length ?? 0));
    extra.set(histogram, 0);
    if (extraLevels !== undefined) extra.set(extraLevels, histogram.length);
    core.machine.transition(
      'UPLOADING',
      `trained: loss ${trained.meanLoss.toFixed(4)}${privacy === null ? `, rms ${rms.toExponential(3)}` : ''}`,
    );
    const encoded =
      privacy === null
        ? encodeWithFeedback(core, open, update, extra)
        : encodePrivate(core, open, privacy, update, extra);
    update.fill(0);
    if (!(await uploadUpdate(core, open, aggregator, encoded, rms, stale))) {
      core.machine.transition('READY', `upload of round ${open.round} abandoned`);
      return;
    }
    log.info(
      {
        aggregator,
        blocks: encoded.blocks.length,
        examples: core.examples,
        steps: trained.steps,
        rms,
        seconds: Number(((performance.now() - t0) / 1000).toFixed(3)),
      },
      'update sent',
    );
    core.machine.transition('READY', `update of round ${open.round} acknowledged`);
  } catch (err) {
    log.error({ err }, 'round failed: update discarded');
    const state = core.machine.state;
    if (state === 'TRAINING' || state === 'UPLOADING')
      core.machine.transition('READY', `round ${open.round} failed`);
  }
}

/** The update quantized with error feedback; the new residual is staged (the decision settles it). */
function encodeWithFeedback(
  core: AgentCore,
  open: ControlBodies['round-open'],
  update: Float32Array,
  extraLevels: Uint8Array | undefined,
) {
  const previous = core.store.loadResidual();
  const encoded = encodeUpdate({
    ...updateFraming(core, open),
    update,
    residual: previous !== null && previous.length === update.length ? previous : null,
    exampleWeight: pinnedExamples(core, open),
    extraLevels,
  });
  core.store.stageResidual(open.round, encoded.residual);
  return encoded;
}

/** The update as private levels (clipped, rounded, noised: docs/privacy.md), then any evaluation lanes. */
function encodePrivate(
  core: AgentCore,
  open: ControlBodies['round-open'],
  privacy: ServicePrivacy,
  update: Float32Array,
  extraLevels: Uint8Array | undefined,
) {
  const own = privateLevels(privacy, update, open.bits);
  const extra = extraLevels ?? new Uint8Array(0);
  const levels = new Uint8Array(own.levels.length + extra.length);
  levels.set(own.levels, 0);
  levels.set(extra, own.levels.length);
  own.levels.fill(0);
  core.ctx.log.info(
    { round: open.round, norm: own.norm, clipped: own.clipped, clamped: own.clamped },
    'private update: clipped, rounded and noised',
  );
  try {
    return encodeUpdate({
      ...updateFraming(core, open),
      update: new Float32Array(0),
      residual: null,
      exampleWeight: pinnedExamples(core, open),
      extraLevels: levels,
    });
  } finally {
    levels.fill(0);
  }
}
