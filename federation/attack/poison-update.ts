import { assertFiniteArray, InvalidArgumentError } from '../../src/errors/index.ts';
import { checkLabels } from '../partition/check-args.ts';
import { type AttackConfig, assertAttackConfig, attackFactor } from './attack-config.ts';

/**
 * What an attacking site sends instead of its honest update u: −factor·u for `sign-flip`,
 * factor·u for `scaling` (each product in float64, rounded once to float32), and an unchanged copy
 * for `label-flip`, which poisons the training data instead (see {@link flipLabels}).
 *
 * @param update - u, every value finite (index named); not modified
 * @param attack - a valid {@link AttackConfig}
 * @returns a fresh Float32Array; a product overflowing float32 throws `UPDATE_NON_FINITE`
 */
export function poisonUpdate(update: Float32Array, attack: AttackConfig): Float32Array {
  assertAttackConfig(attack);
  if (!(update instanceof Float32Array)) {
    throw new InvalidArgumentError('update must be a Float32Array', { details: { name: 'update' } });
  }
  assertFiniteArray('update', update);
  if (attack.kind === 'label-flip') return update.slice();
  const scale = attack.kind === 'sign-flip' ? -attackFactor(attack) : attackFactor(attack);
  const out = new Float32Array(update.length);
  for (let i = 0; i < update.length; i++) out[i] = update[i]! * scale;
  assertFiniteArray('poisoned update', out);
  return out;
}

/** Integer label arrays {@link flipLabels} accepts. */
export type LabelArray = Uint8Array | Uint16Array | Uint32Array | Int32Array;

/**
 * Label flipping (the `label-flip` attack): y ↦ classCount − 1 − y, so with 10 classes 0 ↔ 9,
 * 1 ↔ 8, …; an involution with no fixed point for an even classCount.
 *
 * @param labels - class indices, each an integer in [0, classCount) (the first outside is named); not modified
 * @param classCount - integer in [1, 256]
 * @returns a fresh array of the same type
 */
export function flipLabels<T extends LabelArray>(labels: T, classCount: number): T {
  if (
    !(
      labels instanceof Uint8Array ||
      labels instanceof Uint16Array ||
      labels instanceof Uint32Array ||
      labels instanceof Int32Array
    )
  ) {
    throw new InvalidArgumentError('labels must be a Uint8Array, Uint16Array, Uint32Array or Int32Array', {
      details: { name: 'labels' },
    });
  }
  checkLabels(labels, classCount);
  const out = labels.slice() as T;
  const top = classCount - 1;
  for (let i = 0; i < out.length; i++) out[i] = top - out[i]!;
  return out;
}
