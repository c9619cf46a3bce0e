import { InvalidArgumentError } from '../../src/errors/index.ts';
import { weightedMeanDelta } from '../strategy/weighted-mean-delta.ts';
import { checkUpdates } from './check-updates.ts';
import { coordinateMedian } from './coordinate-median.ts';
import { clipToL2Norm, l2Norm } from './l2-norm.ts';
import { multiKrum } from './multi-krum.ts';
import { trimCount, trimmedMean } from './trimmed-mean.ts';

/** The aggregation rules {@link robustAggregate} implements. */
export const ROBUST_RULE_NAMES = Object.freeze(['mean', 'median', 'trimmed-mean', 'multi-krum'] as const);

/** One of {@link ROBUST_RULE_NAMES}. */
export type RobustRuleName = (typeof ROBUST_RULE_NAMES)[number];

/** Fields every rule accepts. */
interface NormBounded {
  /**
   * When set, each update u is first scaled to u·min(1, normBound/‖u‖₂) (norm bounding, Sun et
   * al. 2019, "Can You Really Backdoor Federated Learning?"); parameter units, finite and > 0.
   */
  readonly normBound?: number;
}

/** Unweighted coordinate-wise mean: no robustness, the baseline. */
export interface MeanRule extends NormBounded {
  readonly name: 'mean';
}

/** Coordinate-wise median ({@link coordinateMedian}). */
export interface MedianRule extends NormBounded {
  readonly name: 'median';
}

/** Coordinate-wise trimmed mean ({@link trimmedMean}) dropping ⌊trimFraction·n⌋ values per side. */
export interface TrimmedMeanRule extends NormBounded {
  readonly name: 'trimmed-mean';
  /** Share of the n updates trimmed from each side, in [0, 0.5). */
  readonly trimFraction: number;
}

/** Multi-Krum ({@link multiKrum}). */
export interface MultiKrumRule extends NormBounded {
  readonly name: 'multi-krum';
  /** f, Byzantine updates tolerated; integer ≥ 0, and a round needs n > 2f + 2 updates. */
  readonly byzantine: number;
  /** m, updates averaged; integer ≥ 1 and ≤ n; default n − f. */
  readonly select?: number;
}

/** A robust aggregation rule of `plain` mode, tagged by `name`. */
export type RobustRule = MeanRule | MedianRule | TrimmedMeanRule | MultiKrumRule;

/** Result of {@link robustAggregate}. */
export interface RobustAggregate {
  /** The aggregate update, float32. */
  readonly mean: Float32Array;
  /** Indices of the updates that entered `mean`, ascending (all of them except under Multi-Krum). */
  readonly selected: readonly number[];
  /** How many updates `normBound` scaled down (0 without a bound). */
  readonly clippedCount: number;
}

const FIELDS: Readonly<Record<RobustRuleName, readonly string[]>> = {
  mean: ['name', 'normBound'],
  median: ['name', 'normBound'],
  'trimmed-mean': ['name', 'normBound', 'trimFraction'],
  'multi-krum': ['name', 'normBound', 'byzantine', 'select'],
};

/**
 * Throws `INVALID_ARGUMENT` naming the field (`rule.trimFraction`) unless `rule` is a valid
 * {@link RobustRule}: a known `name`, only that rule's fields, `trimFraction` in [0, 0.5),
 * `byzantine` an integer ≥ 0, `select` an integer ≥ 1, `normBound` finite and > 0. Fields set to
 * `undefined` count as absent. Limits that depend on the number of updates are checked by
 * {@link robustAggregate}.
 */
export function assertRobustRule(rule: unknown): asserts rule is RobustRule {
  if (typeof rule !== 'object' || rule === null) {
    throw new InvalidArgumentError(`rule must be a robust rule object, got ${String(rule)}`, {
      details: { name: 'rule' },
    });
  }
  const fields = rule as Partial<Record<string, unknown>>;
  const name = fields.name;
  if (typeof name !== 'string' || !(ROBUST_RULE_NAMES as readonly string[]).includes(name)) {
    throw new InvalidArgumentError(
      `rule.name is ${JSON.stringify(name)}, must be one of ${ROBUST_RULE_NAMES.join(', ')}`,
      { details: { name: 'rule.name', value: String(name) } },
    );
  }
  const allowed = FIELDS[name as RobustRuleName];
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && !allowed.includes(key)) {
      throw new InvalidArgumentError(
        `rule.${key} does not apply to ${name} (allowed: ${allowed.join(', ')})`,
        {
          details: { name: `rule.${key}` },
        },
      );
    }
  }
  if (fields.normBound !== undefined) {
    const b = fields.normBound;
    if (typeof b !== 'number' || !Number.isFinite(b) || !(b > 0)) {
      throw fieldError('rule.normBound', b, 'finite and > 0');
    }
  }
  if (name === 'trimmed-mean') {
    const t = fields.trimFraction;
    if (typeof t !== 'number' || !(t >= 0 && t < 0.5)) {
      throw fieldError('rule.trimFraction', t, 'in [0, 0.5)');
    }
  }
  if (name === 'multi-krum') {
    const f = fields.byzantine;
    if (!isInteger(f, 0)) throw fieldError('rule.byzantine', f, 'an integer ≥ 0');
    const m = fields.select;
    if (m !== undefined && !isInteger(m, 1)) throw fieldError('rule.select', m, 'an integer ≥ 1');
  }
}

/**
 * Aggregates the updates of one `plain`-mode round under `rule`: optional norm bounding of each
 * update ({@link clipToL2Norm}), then the rule's mean. All rules are unweighted: a Byzantine site
 * could claim any example count.
 *
 * @param updates - n ≥ 1 updates (client deltas), all the same length, every value finite (the
 *   offending index is named); not modified
 * @param rule - see {@link assertRobustRule}; Multi-Krum also needs n > 2·byzantine + 2 and select ≤ n
 */
export function robustAggregate(updates: readonly Float32Array[], rule: RobustRule): RobustAggregate {
  assertRobustRule(rule);
  checkUpdates(updates);
  const n = updates.length;
  let bounded = updates;
  let clippedCount = 0;
  if (rule.normBound !== undefined) {
    const bound = rule.normBound;
    // Inputs are never modified, so an update inside the ball is used as is rather than copied.
    bounded = updates.map((u) => {
      if (!(l2Norm(u) > bound)) return u;
      clippedCount++;
      return clipToL2Norm(u, bound).clipped;
    });
  }
  const all = bounded.map((_, i) => i);
  switch (rule.name) {
    case 'mean': {
      const ones = all.map(() => 1);
      return { mean: weightedMeanDelta(bounded, ones), selected: all, clippedCount };
    }
    case 'median':
      return { mean: coordinateMedian(bounded), selected: all, clippedCount };
    case 'trimmed-mean':
      return { mean: trimmedMean(bounded, trimCount(n, rule.trimFraction)), selected: all, clippedCount };
    case 'multi-krum': {
      const { mean, selected } = multiKrum(bounded, { byzantine: rule.byzantine, select: rule.select });
      return { mean, selected, clippedCount };
    }
  }
}

function isInteger(value: unknown, min: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

function fieldError(name: string, value: unknown, range: string): InvalidArgumentError {
  return new InvalidArgumentError(`${name} must be ${range}, got ${String(value)}`, {
    details: { name, value: String(value) },
  });
}
