import { InvalidArgumentError } from '../../src/errors/index.ts';
import type { Dataset } from './engine.ts';

/**
 * Throws `INVALID_ARGUMENT` naming what is wrong with a data set: shape mismatch, non-finite
 * feature (row and column named), label out of range (row named).
 */
export function assertDataset(data: Dataset, name = 'data'): void {
  const { features, labels, count, featureCount, classCount } = data;
  if (!Number.isInteger(count) || count < 1)
    throw new InvalidArgumentError(`${name}.count ${count} must be ≥ 1`);
  if (features.length !== count * featureCount) {
    throw new InvalidArgumentError(
      `${name}.features length ${features.length}, ${count} rows × ${featureCount} features expects ${count * featureCount}`,
    );
  }
  if (labels.length !== count) {
    throw new InvalidArgumentError(`${name}.labels length ${labels.length}, ${name} has ${count} rows`);
  }
  for (let i = 0; i < features.length; i++) {
    const v = features[i]!;
    if (v - v !== 0) {
      throw new InvalidArgumentError(
        `${name} row ${Math.floor(i / featureCount)} feature ${i % featureCount} is ${v}; features must be finite`,
      );
    }
  }
  for (let r = 0; r < count; r++) {
    if (labels[r]! >= classCount) {
      throw new InvalidArgumentError(`${name} row ${r} label ${labels[r]} is outside [0, ${classCount})`);
    }
  }
}
