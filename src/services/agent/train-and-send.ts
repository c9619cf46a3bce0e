import { InvalidArgumentError } from '../../errors/index.ts';
import {
  type ControlBodies,
  encodeUpdateYielding,
  evaluationLevels,
  RMS_BUCKETS,
  rmsLevels,
} from '../../protocol/index.ts';
import { bytesToHex, type Commit } from '../../versions/index.ts';
import { updatePlan } from '../evaluation-plan.ts';
import type { ServicePrivacy } from '../privacy-plan.ts';
import { serviceRobustRule } from '../robust-plan.ts';
import type { AgentCore } from './agent-core.ts';
import { trainLocally } from './local-training.ts';
import { privateLevels } from './private-update.ts';
import { ownEvaluation } from './site-evaluation.ts';
import { type SiteRows, siteRows } from './site-rows.ts';
import { pinnedExamples, updateFraming, uploadUpdate } from './update-upload.ts';

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
        ? await encodeWithFeedback(core, open, update, extra)
        : await encodePrivate(core, open, privacy, update, extra);
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
async function encodeWithFeedback(
  core: AgentCore,
  open: ControlBodies['round-open'],
  update: Float32Array,
  extraLevels: Uint8Array | undefined,
) {
  const previous = core.store.loadResidual();
  const encoded = await encodeUpdateYielding({
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
async function encodePrivate(
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
    return await encodeUpdateYielding({
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
