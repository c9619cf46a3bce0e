import type { Dataset } from '../../gpu/engine/index.ts';
import { InvalidArgumentError } from '../errors/index.ts';

/**
 * The rows `indices` of `data` (in that order; repeats allowed) as a new {@link Dataset} with
 * copied features and labels. An index outside [0, count) is `INVALID_ARGUMENT`; so is an empty
 * list, since a data set has at least one row.
 */
export function subset(data: Dataset, indices: ArrayLike<number>): Dataset {
  const m = data.featureCount;
  const count = indices.length;
  if (count === 0) throw new InvalidArgumentError('subset needs at least one row index');
  const features = new Float32Array(count * m);
  const labels = new Uint8Array(count);
  for (let k = 0; k < count; k++) {
    const i = indices[k]!;
    if (!Number.isInteger(i) || i < 0 || i >= data.count) {
      throw new InvalidArgumentError(`indices[${k}] is ${i}, outside [0, ${data.count})`, {
        details: { index: k, value: i, count: data.count },
      });
    }
    features.set(data.features.subarray(i * m, (i + 1) * m), k * m);
    labels[k] = data.labels[i]!;
  }
  return { features, labels, count, featureCount: m, classCount: data.classCount };
}
