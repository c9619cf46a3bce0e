import { apportion, RANDOM_STREAMS, RandomStream, shuffleInPlace } from '../../federation/index.ts';
import type { Dataset } from '../../gpu/engine/index.ts';
import { assertDataset } from '../../gpu/engine/index.ts';
import { assertInteger, InvalidArgumentError } from '../errors/index.ts';

/** Row indices of a train/test split, each ascending; take the rows with {@link subset}. */
export interface TrainTestSplit {
  readonly train: Uint32Array;
  readonly test: Uint32Array;
}

/**
 * Stratified random split of the rows of `data` into train and test indices. The test side gets `T = round(count · testFraction)` rows, clamped to
 * [1, count − 1]; T is shared among classes in proportion to their sizes (largest remainder, ties
 * to the lower class), and each class's test rows are the first of its rows after a Fisher–Yates
 * shuffle on stream {@link RANDOM_STREAMS}.trainTestSplit of `seed`. So class proportions match
 * on both sides to within one row per class, and the split is a pure function of its arguments.
 *
 * @param testFraction - in (0, 1)
 * @param seed - uint32
 */
export function trainTestSplit(data: Dataset, testFraction: number, seed: number): TrainTestSplit {
  if (!(testFraction > 0 && testFraction < 1)) {
    throw new InvalidArgumentError(`testFraction must be in (0, 1), got ${testFraction}`);
  }
  assertInteger('seed', seed, 0, 0xffff_ffff);
  assertDataset(data);
  const { count, classCount, labels } = data;
  if (count < 2) throw new InvalidArgumentError(`a split needs ≥ 2 rows, the data set has ${count}`);
  const testTotal = Math.min(count - 1, Math.max(1, Math.round(count * testFraction)));
  const byClass: number[][] = Array.from({ length: classCount }, () => []);
  for (let i = 0; i < count; i++) byClass[labels[i]!]!.push(i);
  const quotas = apportion(
    testTotal,
    byClass.map((rows) => rows.length),
  );
  const random = new RandomStream(seed, RANDOM_STREAMS.trainTestSplit);
  const isTest = new Uint8Array(count);
  byClass.forEach((rows, c) => {
    shuffleInPlace(rows, random);
    for (let k = 0; k < quotas[c]!; k++) isTest[rows[k]!] = 1;
  });
  const testIndices = new Uint32Array(testTotal);
  const trainIndices = new Uint32Array(count - testTotal);
  let a = 0;
  let b = 0;
  for (let i = 0; i < count; i++) {
    if (isTest[i]) testIndices[a++] = i;
    else trainIndices[b++] = i;
  }
  return { train: trainIndices, test: testIndices };
}
