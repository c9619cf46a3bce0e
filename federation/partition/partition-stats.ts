import { InvalidArgumentError } from '../../src/errors/index.ts';
import { checkLabels } from './check-args.ts';

/**
 * Per-site label histogram: `counts[s][c]` is the number of rows of class c at site s. For logs
 * and tests.
 *
 * @param labels - one label per row, integers in [0, classCount)
 * @param classCount - integer in [1, 256]
 * @param parts - row indices per site, each < labels.length
 */
export function partitionStats(
  labels: ArrayLike<number>,
  classCount: number,
  parts: readonly ArrayLike<number>[],
): number[][] {
  checkLabels(labels, classCount);
  return parts.map((part, s) => {
    const counts = new Array<number>(classCount).fill(0);
    for (let k = 0; k < part.length; k++) {
      const i = part[k]!;
      const y = labels[i];
      if (y === undefined || !Number.isInteger(i)) {
        throw new InvalidArgumentError(`parts[${s}][${k}] is ${i}, not a row index below ${labels.length}`);
      }
      counts[y]!++;
    }
    return counts;
  });
}
