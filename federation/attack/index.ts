/**
 * Simulated attacks for robustness experiments: which sites attack ({@link attackingSites}), how
 * they poison their update (sign flip, scaling) or their data (label flip). Pure math, no I/O.
 */
export {
  ATTACK_DEFAULT_FACTORS,
  ATTACK_KINDS,
  type AttackConfig,
  type AttackKind,
  assertAttackConfig,
  attackFactor,
} from './attack-config.ts';
export { attackingSites } from './attacking-sites.ts';
export { flipLabels, type LabelArray, poisonUpdate } from './poison-update.ts';
