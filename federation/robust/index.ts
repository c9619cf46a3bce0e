/**
 * Byzantine-robust aggregation for `plain` mode: L2 norm bounding (also the site-side clipping of
 * differential privacy), coordinate-wise median and trimmed mean, Multi-Krum, and the
 * {@link RobustRule} that selects among them. Pure math on Float32Array updates, no I/O.
 */
export { coordinateMedian } from './coordinate-median.ts';
export { clipToL2Norm, type L2Clip, l2Norm } from './l2-norm.ts';
export { type MultiKrumOptions, type MultiKrumResult, multiKrum } from './multi-krum.ts';
export {
  assertRobustRule,
  type MeanRule,
  type MedianRule,
  type MultiKrumRule,
  ROBUST_RULE_NAMES,
  type RobustAggregate,
  type RobustRule,
  type RobustRuleName,
  robustAggregate,
  type TrimmedMeanRule,
} from './robust-rule.ts';
export { trimCount, trimmedMean } from './trimmed-mean.ts';
