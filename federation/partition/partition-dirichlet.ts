import { InvalidArgumentError } from '../../src/errors/index.ts';
import { apportion } from './apportion.ts';
import { checkLabels, checkSitesAndSeed, sortParts } from './check-args.ts';
import { sampleDirichlet } from './dirichlet.ts';
import { RANDOM_STREAMS, RandomStream } from './random-stream.ts';
import { shuffleInPlace } from './shuffle.ts';

/** How many full draws {@link partitionDirichlet} tries before the deterministic fix-up. */
export const DIRICHLET_MAX_ATTEMPTS = 10;

/**
 * Label-skewed non-IID partition (Hsu et al. 2019; Yurochkin et al. 2019): for each class c, draws
 * site proportions p ~ Dirichlet(α, …, α) over the `sites` sites, shuffles that class's rows and
 * hands site s the next `n_c · p_s` of them (largest-remainder rounding, so the counts sum to
 * n_c exactly). Small α (0.1) gives sites dominated by one or two classes; large α (100) is close
 * to IID.
 *
 * Every site must get at least one row. If a draw leaves a site empty, the whole draw is repeated,
 * continuing the same random stream, up to {@link DIRICHLET_MAX_ATTEMPTS} times. If the last draw
 * still leaves sites empty, each empty site in turn (lowest index first) takes the last row
 * assigned to the currently largest site (lowest index on ties). All of this is a pure function
 * of the arguments.
 *
 * Randomness: stream {@link RANDOM_STREAMS}.partitionDirichlet of the counter RNG keyed by `seed`;
 * Gamma variates by Marsaglia–Tsang with Box–Muller normals, α < 1 by the boost trick.
 *
 * @param labels - one label per row, integers in [0, classCount)
 * @param classCount - integer in [1, 256]
 * @param sites - integer in [1, labels.length]
 * @param alpha - concentration, finite and > 0
 * @param seed - uint32
 * @returns one array of row indices per site, each sorted ascending, covering every row once
 */
export function partitionDirichlet(
  labels: ArrayLike<number>,
  classCount: number,
  sites: number,
  alpha: number,
  seed: number,
): Uint32Array[] {
  checkLabels(labels, classCount);
  checkSitesAndSeed(labels.length, sites, seed);
  if (!(alpha > 0) || !Number.isFinite(alpha)) {
    throw new InvalidArgumentError(`alpha must be finite and > 0, got ${alpha}`, { details: { alpha } });
  }
  const byClass = rowsByClass(labels, classCount);
  const random = new RandomStream(seed, RANDOM_STREAMS.partitionDirichlet);
  let assigned: number[][] = [];
  for (let attempt = 0; attempt < DIRICHLET_MAX_ATTEMPTS; attempt++) {
    assigned = Array.from({ length: sites }, () => []);
    for (const rows of byClass) {
      if (rows.length === 0) continue;
      const order = shuffleInPlace(rows.slice(), random);
      const counts = apportion(order.length, sampleDirichlet(sites, alpha, random));
      let at = 0;
      for (let s = 0; s < sites; s++) {
        const site = assigned[s]!;
        for (let k = 0; k < counts[s]!; k++) site.push(order[at++]!);
      }
    }
    if (assigned.every((a) => a.length > 0)) break;
  }
  fillEmptySites(assigned);
  return sortParts(assigned.map((a) => Uint32Array.from(a)));
}

function rowsByClass(labels: ArrayLike<number>, classCount: number): Uint32Array[] {
  const counts = new Uint32Array(classCount);
  for (let i = 0; i < labels.length; i++) counts[labels[i]!]!++;
  const out = Array.from(counts, (n) => new Uint32Array(n));
  const fill = new Uint32Array(classCount);
  for (let i = 0; i < labels.length; i++) {
    const y = labels[i]!;
    out[y]![fill[y]!++] = i;
  }
  return out;
}

/** Deterministic fix-up: each empty site takes the last row of the largest site. */
function fillEmptySites(assigned: number[][]): void {
  for (const site of assigned) {
    if (site.length > 0) continue;
    let donor = assigned[0]!;
    for (const other of assigned) if (other.length > donor.length) donor = other;
    site.push(donor.pop()!);
  }
}
