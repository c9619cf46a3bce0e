import { bytesEqual } from '../../../crypto/digest/index.ts';
import type { StrategyState } from '../../../federation/index.ts';
import type { ControlBodies, DecisionBody } from '../../protocol/index.ts';
import { bytesToHex, type Commit, modelHash, strategyStateHash } from '../../versions/index.ts';
import type { ChainCommit } from '../federation-log/index.ts';
import type { AgentCore } from './agent-core.ts';
import { AgentError } from './agent-error.ts';
import { fetchAggregate } from './aggregate-fetch.ts';
import { aggregateDecryptor, decryptProblem } from './aggregate-shares.ts';
import { applyAggregate } from './apply-aggregate.ts';
import { robustDeltaFor } from './robust-record.ts';
import { loadSnapshot } from './snapshot-loader.ts';

/** A model with the strategy state after it. */
interface ModelState {
  readonly parameters: Float32Array;
  readonly strategyState: StrategyState | null;
}

/**
 * Brings the site's store to the head of the federation log (docs/round-protocol.md, "Catch-up,
 * snapshots, recovery"): reads the log, then either replays each commit after the store's head —
 * fetching the round's aggregate from the object store, applying it exactly as on PREPARE, and
 * checking the result hashes to the committed H(w′) and strategy state — or, for a new site (empty
 * store) or one further behind than `history.snapshotEvery` commits, first jumps to the highest
 * snapshot whose content checks against the log's commit (`loadSnapshot`: a refused one is counted
 * and logged, and the one below is tried; with none left it replays from its head or genesis) and
 * replays the rest. Rollback commits restore their target's model. Pending residuals of decided
 * rounds are resolved on the way.
 *
 * Returns how many commits the head moved forward (by a snapshot and replay together). Throws
 * `REPLAY_MISMATCH` when a rebuilt model differs from the
 * log's (the agent halts), `REPLAY_UNAVAILABLE` when an aggregate or snapshot cannot be fetched
 * (retried later), `STORE_DIVERGED` when the store's head is not on the federation's chain.
 */
export async function catchUp(core: AgentCore): Promise<number> {
  const { store, follower } = core;
  await follower.sync();
  const history = follower.history;
  const target = history.head;
  let head = store.head();
  const startHeight = head?.height ?? 0;
  if (head !== null && bytesEqual(head.hash, target.commit.hash)) {
    resolveResiduals(core);
    return 0;
  }
  if (head !== null && history.commitByHash(head.hash) === undefined) {
    throw new AgentError(
      'STORE_DIVERGED',
      `the store ${store.dir} is at ${bytesToHex(head.hash).slice(0, 12)} (height ${head.height}), which is not on the federation's chain (head height ${target.commit.height}); move it aside to rejoin from a snapshot`,
      { details: { head: bytesToHex(head.hash), height: head.height } },
    );
  }
  const from = head?.height ?? -1;
  const every = core.ctx.config.history.snapshotEvery;
  const farBehind = head === null || (every > 0 && target.commit.height - from > every);
  const joined = farBehind
    ? await loadSnapshot(core, { above: from, atOrBelow: target.commit.height })
    : undefined;
  if (joined !== undefined) {
    const cc = history.commitAt(joined.logged.snapshot.height)!;
    for (const r of store.preparedRounds()) store.abortPrepared(r);
    store.jumpTo({
      commit: cc.commit,
      parameters: joined.parameters,
      strategyState: joined.strategyState ?? core.strategy.initialState(joined.parameters.length),
    });
    store.clearResidual();
    for (const r of store.pendingResidualRounds()) store.resolveResidual(r, false);
    core.counters.snapshotsJoined++;
    core.ctx.log.info(
      { height: cc.commit.height, site: joined.logged.snapshot.site, object: joined.logged.snapshot.object },
      'joined from a snapshot',
    );
    head = store.head();
  }
  if (head === null) head = store.init(core.genesis.commit, core.genesis.parameters);
  // Read the head once; each replayed commit then starts from the model and state it just wrote.
  let base: ModelState | undefined;
  for (let h = head.height + 1; h <= target.commit.height; h++) {
    const cc = history.commitAt(h)!;
    const decided = await core.follower.roundOf(cc);
    base ??= { parameters: store.readModel(store.head()!), strategyState: store.loadStrategyState() };
    const next = await replayCommit(core, cc, decided, base);
    const strategyState = next.strategyState ?? core.strategy.initialState(next.parameters.length);
    store.advance({ commit: cc.commit, parameters: next.parameters, strategyState });
    base = { parameters: next.parameters, strategyState };
    if (cc.commit.kind === 'rollback') store.clearResidual();
    resolveResidual(core, cc.commit.round, decided.decision);
    core.counters.replayed++;
  }
  resolveResiduals(core);
  pruneModels(core);
  return store.head()!.height - startHeight;
}

/**
 * The model of `target` (a commit on the chain): from the store when it still holds it, else
 * rebuilt from the highest snapshot at or below it that checks (`loadSnapshot`), or genesis, by
 * replaying in memory.
 */
export async function materialize(core: AgentCore, target: ChainCommit): Promise<Float32Array> {
  const { store } = core;
  if (store.hasModel(target.commit)) {
    try {
      return store.readModel(target.commit);
    } catch {
      // unreadable: rebuild it
    }
  }
  const history = core.follower.history;
  const joined = await loadSnapshot(core, { above: -1, atOrBelow: target.commit.height });
  const height = joined?.logged.snapshot.height ?? 0;
  let state: ModelState =
    joined === undefined
      ? { parameters: core.genesis.parameters, strategyState: null }
      : { parameters: joined.parameters, strategyState: joined.strategyState };
  for (let h = height + 1; h <= target.commit.height; h++) {
    const cc = history.commitAt(h)!;
    state = await replayCommit(core, cc, await core.follower.roundOf(cc), state);
  }
  return state.parameters;
}

/**
 * Applies one chain commit to `base` (the model and state of its parent), checking the log's
 * hashes; `decided` is its decision and RoundOpen (`LogFollower.roundOf`).
 */
async function replayCommit(
  core: AgentCore,
  cc: ChainCommit,
  decided: { readonly decision: DecisionBody; readonly open: ControlBodies['round-open'] },
  base: ModelState,
): Promise<ModelState> {
  const d = decided.decision;
  let next: ModelState;
  if (cc.commit.kind === 'rollback') {
    const target = core.follower.history.commitByHash(d.rollbackTarget)!;
    const parameters = await materialize(core, target);
    next = { parameters, strategyState: core.strategy.initialState(parameters.length) };
  } else if (cc.commit.kind === 'statistics') {
    // The federation's feature sums: the model and strategy state stay the parent's (the log's
    // chain binds the sums; every voter decrypted them from the aggregate).
    next = base;
  } else {
    const problem = decryptProblem(core, cc.commit.round);
    if (problem !== undefined) {
      throw new AgentError(
        'REPLAY_UNAVAILABLE',
        `cannot replay round ${cc.commit.round}: no CKKS key (${problem})`,
      );
    }
    const info = d.aggregate!;
    const ciphertexts = await fetchAggregate(
      core,
      info.object,
      info.totalParams,
      d.aggregateDigest,
      'REPLAY_MISMATCH',
    );
    const robust = await robustDeltaFor(
      core,
      {
        params: d.params,
        round: d.round,
        contributors: info.contributors.map((c) => c.site),
        parameters: base.parameters.length,
      },
      'REPLAY_MISMATCH',
    );
    const decryptor = await aggregateDecryptor(core, info, ciphertexts, d, 'REPLAY_MISMATCH');
    try {
      next = await applyAggregate(
        core,
        base.parameters,
        base.strategyState,
        info,
        ciphertexts,
        d,
        robust,
        decryptor.keyset,
      );
    } catch (cause) {
      // Every voter decoded and applied this aggregate; failing to is a divergence, not bad luck.
      throw new AgentError(
        'REPLAY_MISMATCH',
        `replaying round ${cc.commit.round} fails where the federation's voters succeeded: ${(cause as Error).message}`,
        { cause },
      );
    } finally {
      if (decryptor.owned) decryptor.keyset.delete();
    }
  }
  checkAgainstLog(cc.commit, d, next);
  return next;
}

function checkAgainstLog(commit: Commit, d: DecisionBody, next: ModelState): void {
  const h = modelHash(next.parameters);
  if (!bytesEqual(h, commit.modelHash)) {
    throw new AgentError(
      'REPLAY_MISMATCH',
      `replaying round ${commit.round} (height ${commit.height}) gives model ${bytesToHex(h).slice(0, 12)}, the log committed ${bytesToHex(commit.modelHash).slice(0, 12)}`,
      { details: { round: commit.round, height: commit.height } },
    );
  }
  if (
    next.strategyState !== null &&
    d.stateHash.length > 0 &&
    !bytesEqual(strategyStateHash(next.strategyState), d.stateHash)
  ) {
    throw new AgentError(
      'REPLAY_MISMATCH',
      `replaying round ${commit.round} gives another strategy state than the log committed`,
      { details: { round: commit.round, height: commit.height } },
    );
  }
}

/** Whether `decision` includes this site's update (listed with the digest it sent, when known). */
export function includesMe(core: AgentCore, d: DecisionBody): boolean {
  if (!d.commit || d.aggregate === null) return false;
  const mine = d.aggregate.contributors.find((c) => c.site === core.member);
  if (mine === undefined) return false;
  const sent = core.lastUpdate?.round === d.round ? core.lastUpdate.digest : undefined;
  return sent === undefined || bytesEqual(sent, mine.digest);
}

/**
 * The residual is part of the round's transaction: the one staged when the update was sent
 * becomes current only if the round committed with this site's update in it; on ABORT, or when
 * the site was cut, the residual from before the round stays (nothing of it is lost).
 */
export function resolveResidual(core: AgentCore, round: number, d: DecisionBody): void {
  const apply = includesMe(core, d);
  if (core.store.resolveResidual(round, apply)) {
    if (apply) core.counters.residualsApplied++;
    else core.counters.residualsDropped++;
  }
}

/** Resolves every pending residual whose round the log has decided. */
export function resolveResiduals(core: AgentCore): void {
  for (const round of core.store.pendingResidualRounds()) {
    const decided = core.follower.history.decisionOf(round);
    if (decided !== undefined) resolveResidual(core, round, decided.decision);
  }
}

/** Drops the models of commits older than the last `history.keepModels`; failures only warn. */
export function pruneModels(core: AgentCore): void {
  try {
    core.store.pruneModels(core.ctx.config.history.keepModels);
  } catch (err) {
    core.ctx.log.warn({ err }, 'pruning old models failed');
  }
}
