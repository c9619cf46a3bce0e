import type { ControlBodies, CulpritRecord, Encoding } from '../../protocol/index.ts';
import { statisticsLaneCount } from '../../protocol/index.ts';
import { type AcceptedPartial, encodeRoundParams, type RoundRobust } from '../../round/index.ts';
import { type Commit, type CommitKind, createCommit, ZERO_HASH } from '../../versions/index.ts';
import { nextRoundPrivacy } from '../privacy-plan.ts';
import { serviceRobustRule } from '../robust-plan.ts';
import { contractFeatureCount, federatedStandardization, statisticsCommitAt } from '../statistics-plan.ts';
import { robustStep } from './robust-round.ts';
import type { RoundHost } from './round-host.ts';

const EMPTY = new Uint8Array(0);

/** What every kind of round decides the same way: the commit a YES vote must name. */
export interface VotePlan {
  /** PREPARE's kind, and the kind of the commit the round proposes. */
  readonly kind: 'round' | 'statistics' | 'rollback';
  /**
   * The commit hash a YES vote must name, given the model hash H(w′) and the params the voter
   * names (a statistics voter names the sums it decrypted; any other kind votes PREPARE's).
   * Throws on a model hash or params that cannot be a commit's.
   */
  expectedCommit(
    prepare: ControlBodies['prepare'],
    head: Commit,
    modelHash: Uint8Array,
    voted: Uint8Array,
  ): Uint8Array;
}

/** What a settled aggregate proposes: the commit's params, or why the round aborts. */
export type Settled =
  | { readonly params: Uint8Array }
  | { readonly failed: string; readonly culprit?: CulpritRecord | undefined };

/**
 * One kind of round that sums site updates (docs/round-lifecycle.md), as the coordinator runs it:
 * the runner (`runTrainingRound`) opens, collects partials, stores the aggregate, prepares and
 * judges the same way for every kind; what differs is here.
 */
export interface AggregatePlan extends VotePlan {
  readonly kind: 'round' | 'statistics';
  /** RoundOpen's `kind`: '' for a training round (byte-identical to one written before kinds). */
  readonly openKind: '' | 'statistics';
  /** Lanes every update of the round carries (RoundOpen's `totalParams`). */
  readonly lanes: number;
  /** The params of an aggregate of `contributors` sites before it is settled (an abort records them). */
  params(contributors: number): Uint8Array;
  /**
   * Once the aggregate of `partials` (`contributors` sites) is stored: the params PREPARE
   * proposes, or why the round aborts (and the member at fault, when one is).
   */
  settle(input: {
    readonly open: ControlBodies['round-open'];
    readonly encoding: Encoding;
    readonly partials: readonly AcceptedPartial[];
    readonly contributors: number;
  }): Promise<Settled>;
}

function commitFor(
  prepare: ControlBodies['prepare'],
  kind: CommitKind,
  fields: { aggregateDigest: Uint8Array; modelHash: Uint8Array; params: Uint8Array },
): Uint8Array {
  return createCommit({
    parent: prepare.baseCommit,
    height: prepare.version + 1,
    round: prepare.round,
    kind,
    ...fields,
  }).hash;
}

/**
 * A training round (FedAvg and the other strategies, under `he` or `plain`): every update carries
 * the model's lanes (without the evaluation lanes from breaker level 2); the params record the
 * clip, the strategy and, with differential privacy, what the federation will have spent; with a
 * robust rule (`plain` only) the coordinator reads every contribution and the params record Δ̄.
 */
export function trainingPlan(host: RoundHost, round: number, clip: number): AggregatePlan {
  const cfg = host.ctx.config;
  const privacy = host.budget.privacy;
  const rule = serviceRobustRule(cfg);
  const params = (contributors: number, robust?: RoundRobust) =>
    encodeRoundParams({
      round,
      bits: cfg.codec.bits,
      clip,
      strategy: cfg.learning.strategy,
      learningRate: cfg.learning.learningRate,
      ...(privacy === null
        ? {}
        : { privacy: nextRoundPrivacy(privacy, host.budget.spent(), Math.max(1, contributors)) }),
      ...(robust === undefined ? {} : { robust }),
    });
  return {
    kind: 'round',
    openKind: '',
    // From breaker level 2 the round carries no optional work: no evaluation lanes, sites only train.
    lanes: host.breaker.dropsOptionalWork ? host.requiredLanes : host.updateLength,
    params: (contributors) => params(contributors),
    async settle({ contributors, ...input }) {
      if (rule === null) return { params: params(contributors) };
      const step = await robustStep(host, { ...input, rule });
      if ('failed' in step) return step;
      return { params: params(contributors, step.record) };
    },
    expectedCommit: (prepare, _head, modelHash) =>
      commitFor(prepare, 'round', {
        aggregateDigest: prepare.aggregateDigest,
        modelHash,
        params: prepare.params,
      }),
  };
}

/** Lanes of a statistics round's update under `cfg`'s data contract (0 without one). */
export function statisticsLanes(cfg: RoundHost['ctx']['config']): number {
  const features = contractFeatureCount(cfg);
  return features === null ? 0 : statisticsLaneCount(features, cfg.codec.bits);
}

/**
 * A statistics round (federated standardization): every site sends the fixed-point sums of its
 * rows; the commit keeps the head's model and records the sums the voters decrypted.
 */
export function statisticsPlan(host: RoundHost): AggregatePlan {
  const cfg = host.ctx.config;
  return {
    kind: 'statistics',
    openKind: 'statistics',
    lanes: statisticsLanes(cfg),
    params: () => EMPTY,
    settle: async () => ({ params: EMPTY }),
    expectedCommit: (prepare, head, _modelHash, voted) =>
      commitFor(prepare, 'statistics', {
        aggregateDigest: prepare.aggregateDigest,
        modelHash: head.modelHash,
        params: voted,
      }),
  };
}

/** A rollback round: no aggregate; the commit has the target's model (the voters' H(w′)) and params. */
export const rollbackPlan: VotePlan = {
  kind: 'rollback',
  expectedCommit: (prepare, _head, modelHash) =>
    commitFor(prepare, 'rollback', { aggregateDigest: ZERO_HASH, modelHash, params: prepare.params }),
};

/**
 * The plan of the round the coordinator opens next on `head`: statistics until the chain holds
 * the federation's feature statistics (when it standardizes with them), training after.
 */
export function nextAggregatePlan(host: RoundHost, round: number, clip: number): AggregatePlan {
  const cfg = host.ctx.config;
  const head = host.log.history.head.commit;
  const statistics =
    federatedStandardization(cfg) && statisticsCommitAt(host.log.history, head.height) === undefined;
  return statistics ? statisticsPlan(host) : trainingPlan(host, round, clip);
}
