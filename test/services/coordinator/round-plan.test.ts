// The round plans the coordinator runs: each kind's lanes, params and settling, and the commit a
// YES must name, which must be the very commit the voter builds from the same PREPARE (versions'
// roundCommit, statisticsCommit, rollbackCommit): a plan that drifted from the voter would abort
// every round of its kind.
import { describe, expect, it } from 'vitest';
import { type CohortConfigInput, parseConfig } from '../../../src/config/index.ts';
import { type ControlBodies, statisticsLaneCount } from '../../../src/protocol/index.ts';
import { decodeRoundParams } from '../../../src/round/index.ts';
import type { RoundHost } from '../../../src/services/coordinator/round-host.ts';
import {
  nextAggregatePlan,
  rollbackPlan,
  statisticsPlan,
  trainingPlan,
} from '../../../src/services/coordinator/round-plan.ts';
import {
  type Commit,
  genesisCommit,
  rollbackCommit,
  roundCommit,
  statisticsCommit,
} from '../../../src/versions/index.ts';

const TABULAR: CohortConfigInput['data'] = {
  kind: 'tabular',
  features: [{ name: 'x' }, { name: 'y' }, { name: 'z' }],
  label: { name: 'k', classes: [0, 1] },
  preprocessing: { standardize: 'federated' },
};

/**
 * What a plan reads of its coordinator: the configuration, the privacy budget, the breaker's
 * level, the update's lanes and the log's chain (a genesis head, or one with statistics).
 */
function hostOf(
  input: Partial<CohortConfigInput>,
  opts: { dropsOptionalWork?: boolean; statisticsAt?: number } = {},
): RoundHost {
  const config = parseConfig({ federation: { id: 'plans' }, ...input } as CohortConfigInput);
  const head = genesisCommit(new Float32Array([1, 2, 3]), new Uint8Array(0));
  const history = {
    head: { commit: { ...head, height: 3 } },
    commitAt: (h: number) =>
      h === opts.statisticsAt ? { commit: { ...head, kind: 'statistics' as const } } : undefined,
  };
  return {
    ctx: { config },
    budget: { privacy: null, spent: () => null },
    breaker: { dropsOptionalWork: opts.dropsOptionalWork ?? false },
    requiredLanes: 40,
    updateLength: 52,
    log: { history },
  } as unknown as RoundHost;
}

/** A PREPARE on `head` for round 9 (only the fields the commit binds matter here). */
function prepareOn(head: Commit, kind: string, params: Uint8Array): ControlBodies['prepare'] {
  return {
    round: 9,
    version: head.height,
    baseCommit: head.hash,
    aggregateDigest: new Uint8Array(32).fill(7),
    params,
    kind,
  } as ControlBodies['prepare'];
}

describe('round plans (coordinator)', () => {
  const head = roundCommit(genesisCommit(new Float32Array([0.5, -1]), new Uint8Array(0)), {
    round: 4,
    aggregateDigest: new Uint8Array(32).fill(1),
    modelHash: new Uint8Array(32).fill(2),
    params: new Uint8Array([3]),
  });
  const model = new Uint8Array(32).fill(9);

  it('a training round opens with every lane, or only the required ones once the breaker drops optional work', () => {
    const plan = trainingPlan(hostOf({}), 9, 0.05);
    expect([plan.kind, plan.openKind, plan.lanes]).toEqual(['round', '', 52]);
    expect(trainingPlan(hostOf({}, { dropsOptionalWork: true }), 9, 0.05).lanes).toBe(40);
  });

  it('a training round’s params record the round, the clip and the strategy; without a robust rule settling keeps them', async () => {
    const plan = trainingPlan(
      hostOf({ learning: { strategy: 'fedavg', learningRate: 1 } }),
      9,
      Math.fround(0.05),
    );
    const params = decodeRoundParams(plan.params(3));
    expect(params).toMatchObject({ round: 9, clip: Math.fround(0.05), strategy: 'fedavg', learningRate: 1 });
    expect(params.privacy).toBeUndefined();
    expect(params.robust).toBeUndefined();
    const settled = await plan.settle({
      open: {} as ControlBodies['round-open'],
      encoding: {} as ControlBodies['prepare']['encoding'],
      partials: [],
      contributors: 3,
    });
    expect(settled).toEqual({ params: plan.params(3) });
  });

  it('a training round’s expected commit is the round commit the voter builds', () => {
    const params = new Uint8Array([1, 2, 3]);
    const p = prepareOn(head, 'round', params);
    const voter = roundCommit(head, {
      round: 9,
      aggregateDigest: p.aggregateDigest,
      modelHash: model,
      params,
    });
    expect(trainingPlan(hostOf({}), 9, 0.05).expectedCommit(p, head, model, new Uint8Array(0))).toEqual(
      voter.hash,
    );
    // Another H(w′) is another commit.
    expect(
      trainingPlan(hostOf({}), 9, 0.05).expectedCommit(p, head, new Uint8Array(32), new Uint8Array(0)),
    ).not.toEqual(voter.hash);
  });

  it('a statistics round opens with the contract’s statistics lanes and commits the sums voted on the head’s model', async () => {
    const host = hostOf({ data: TABULAR });
    const plan = statisticsPlan(host);
    const bits = host.ctx.config.codec.bits;
    expect([plan.kind, plan.openKind, plan.lanes]).toEqual([
      'statistics',
      'statistics',
      statisticsLaneCount(3, bits),
    ]);
    expect(plan.params(5)).toEqual(new Uint8Array(0));
    const voted = new Uint8Array([4, 5, 6]);
    const p = prepareOn(head, 'statistics', new Uint8Array(0));
    const voter = statisticsCommit(head, { round: 9, aggregateDigest: p.aggregateDigest, params: voted });
    // The voter's H(w′) is ignored: a statistics commit keeps the head's model.
    expect(plan.expectedCommit(p, head, model, voted)).toEqual(voter.hash);
  });

  it('a rollback’s expected commit is the rollback commit the voter builds for the target', () => {
    const target = genesisCommit(new Float32Array([0.25]), new Uint8Array([8]));
    const p = prepareOn(head, 'rollback', target.params);
    const voter = rollbackCommit(head, target, 9, target.params);
    expect(rollbackPlan.expectedCommit(p, head, target.modelHash, new Uint8Array(0))).toEqual(voter.hash);
  });

  it('the next round gathers statistics until the chain holds them, then trains', () => {
    expect(nextAggregatePlan(hostOf({ data: TABULAR }), 9, 0.05).kind).toBe('statistics');
    expect(nextAggregatePlan(hostOf({ data: TABULAR }, { statisticsAt: 2 }), 9, 0.05).kind).toBe('round');
    expect(nextAggregatePlan(hostOf({}), 9, 0.05).kind).toBe('round');
  });
});
