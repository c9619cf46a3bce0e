import { assertInteger, InvalidArgumentError } from '../../src/errors/index.ts';

const UINT32_MAX = 0xffff_ffff;

/** Shared argument checks of the partition functions: sites, seed, and that every site can get a row. */
export function checkSitesAndSeed(count: number, sites: number, seed: number): void {
  assertInteger('sites', sites, 1, UINT32_MAX);
  assertInteger('seed', seed, 0, UINT32_MAX);
  if (count < sites) {
    throw new InvalidArgumentError(`${count} rows cannot give each of ${sites} sites at least one row`, {
      details: { count, sites },
    });
  }
}

/** Throws `INVALID_ARGUMENT` naming the first label ≥ `classCount`. */
export function checkLabels(labels: ArrayLike<number>, classCount: number): void {
  assertInteger('classCount', classCount, 1, 256);
  for (let i = 0; i < labels.length; i++) {
    const y = labels[i]!;
    if (!Number.isInteger(y) || y < 0 || y >= classCount) {
      throw new InvalidArgumentError(`labels[${i}] is ${y}, outside [0, ${classCount})`, {
        details: { index: i, label: y, classCount },
      });
    }
  }
}

/** Sorts each part ascending in place and returns the parts. */
export function sortParts(parts: Uint32Array[]): Uint32Array[] {
  for (const p of parts) p.sort();
  return parts;
}
