import { bytesEqual } from '../../../crypto/digest/index.ts';
import { type DecisionBody, sealControl } from '../../protocol/index.ts';
import { bytesToHex, type Commit, VersionError } from '../../versions/index.ts';
import type { AgentCore } from './agent-core.ts';
import { pruneModels, resolveResidual } from './catch-up.ts';
import { reportPrivacy } from './privacy-record.ts';
import { maybeWriteSnapshot } from './snapshot-writer.ts';

/** What a decision did to this site. */
export type DecisionOutcome =
  /** Its prepared candidate became the head. */
  | { readonly kind: 'committed'; readonly head: Commit; readonly switchedUnixMs: number }
  /** Its prepared candidate was discarded. */
  | { readonly kind: 'aborted' }
  /** The federation committed something this site does not hold: it must catch up. */
  | { readonly kind: 'behind' }
  /** Nothing to do (a round it did not prepare, and its head is current). */
  | { readonly kind: 'none' };

/**
 * Step 7 of the round (docs/round-protocol.md): applies a decision (of a verified log entry, from
 * the broadcast or the log). A prepared candidate of that round is switched to atomically on COMMIT
 * (one rename in the store) or discarded on ABORT; the round's staged residual becomes current only
 * when the commit holds this site's update. A COMMIT this site did not prepare leaves it behind
 * (catch-up follows).
 */
export function applyDecision(core: AgentCore, d: DecisionBody): DecisionOutcome {
  const { machine, store } = core;
  const log = core.ctx.log.child({ round: d.round });
  const prepared = core.preparedRound;
  if (prepared === d.round && (machine.state === 'PREPARED' || machine.state === 'RECOVERING')) {
    core.preparedRound = null;
    if (!d.commit) {
      store.abortPrepared(prepared);
      resolveResidual(core, d.round, d);
      core.counters.aborts++;
      machine.transition('READY', `ABORT r${prepared}: ${d.reason || 'no reason given'}`);
      return { kind: 'aborted' };
    }
    let head: Commit;
    try {
      head = store.commitPrepared(prepared, d.commitHash);
    } catch (err) {
      if (err instanceof VersionError && err.code === 'PREPARED_MISMATCH') {
        // The federation committed another model than this site computed: replay decides who is right.
        store.abortPrepared(prepared);
        machine.transition('READY', `COMMIT r${prepared} of another candidate`);
        log.error(
          { decided: bytesToHex(d.commitHash), err },
          'the committed candidate is not mine: catching up',
        );
        return { kind: 'behind' };
      }
      core.preparedRound = prepared;
      throw err;
    }
    const switchedUnixMs = Date.now();
    resolveResidual(core, d.round, d);
    if (d.kind === 'rollback') store.clearResidual();
    core.counters.commits++;
    machine.transition('READY', `COMMIT r${prepared} ${bytesToHex(head.hash).slice(0, 12)}`);
    return { kind: 'committed', head, switchedUnixMs };
  }
  resolveResidual(core, d.round, d);
  if (d.commit && !bytesEqual(store.head()!.hash, d.commitHash)) {
    log.info(
      { decided: bytesToHex(d.commitHash).slice(0, 12), state: machine.state },
      'COMMIT of a round this site did not prepare: catching up',
    );
    return { kind: 'behind' };
  }
  return { kind: 'none' };
}

/**
 * Applies a verified decision and what follows it: switch (or discard), announce the switch, then
 * `afterSwitch` (the log view's fold, when it follows the switch), the accuracy report, a
 * snapshot when this site writes it, and pruning; a READY site left behind catches up.
 */
export async function settleDecision(
  core: AgentCore,
  d: DecisionBody,
  sequence: number,
  steps: { readonly afterSwitch?: () => Promise<void>; readonly catchUp: () => Promise<void> },
): Promise<void> {
  const afterSwitch = steps.afterSwitch ?? (async () => {});
  const outcome = applyDecision(core, d);
  if (outcome.kind === 'committed') {
    await announceSwitch(core, d.round, outcome.head, outcome.switchedUnixMs);
    reportPrivacy(core, outcome.head);
    await afterSwitch();
    await reportAccuracy(core, d.round, outcome.head, outcome.switchedUnixMs);
    await maybeWriteSnapshot(core, d, outcome.head, sequence);
    pruneModels(core);
    return;
  }
  await afterSwitch();
  if (outcome.kind === 'behind' && core.machine.state === 'READY') await steps.catchUp();
}

/**
 * Tells the coordinator this site switched to `head` (parameter-sync latency). The accuracy report
 * ({@link reportAccuracy}) is a separate step so that nothing else runs between the switch and this
 * announcement.
 */
export async function announceSwitch(
  core: AgentCore,
  round: number,
  head: Commit,
  switchedUnixMs: number,
): Promise<void> {
  await publishSwitched(core, round, head, switchedUnixMs, -1);
  core.ctx.log.info(
    { round, head: bytesToHex(head.hash), height: head.height },
    'switched to the committed model',
  );
}

/** When the agent evaluates: scores the committed model and reports the switch again with its accuracy. */
export async function reportAccuracy(
  core: AgentCore,
  round: number,
  head: Commit,
  switchedUnixMs: number,
): Promise<void> {
  if (core.testSet === null || core.engine === null) return;
  try {
    const parameters = core.store.readModel(head);
    const accuracy = (await core.engine.evaluate(core.spec, parameters, core.testSet)).accuracy;
    core.counters.lastTestAccuracy = accuracy;
    core.ctx.log.info({ round, testAccuracy: accuracy }, 'evaluated the committed model');
    await publishSwitched(core, round, head, switchedUnixMs, accuracy);
  } catch (err) {
    core.ctx.log.error({ round, err }, 'evaluation failed');
  }
}

async function publishSwitched(
  core: AgentCore,
  round: number,
  head: Commit,
  switchedUnixMs: number,
  testAccuracy: number,
): Promise<void> {
  try {
    await core.ctx.transport.publish(
      core.ctx.subjects.switched(core.member),
      sealControl(
        'switched',
        {
          federation: core.ctx.config.federation.id,
          round,
          member: core.member,
          commitHash: head.hash,
          switchedUnixMs,
          testAccuracy,
        },
        core.member,
        core.ctx.signing,
      ),
    );
  } catch (err) {
    core.ctx.log.error({ round, err }, 'switched not published');
  }
}

/** Publishes the site's signed heartbeat: its head (hash and height), example count and state. */
export async function sendHeartbeat(core: AgentCore): Promise<void> {
  const head = core.store.head()!;
  const { ctx } = core;
  await ctx.transport.publish(
    ctx.subjects.heartbeat(core.member),
    sealControl(
      'heartbeat',
      {
        federation: ctx.config.federation.id,
        member: core.member,
        role: 'site',
        sentUnixMs: Date.now(),
        head: head.hash,
        height: head.height,
        examples: core.examples,
        state: core.machine.state,
      },
      core.member,
      ctx.signing,
    ),
  );
}
