import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  apportion,
  partitionByColumn,
  partitionDirichlet,
  partitionIid,
  partitionShards,
  partitionStats,
  RandomStream,
  sampleDirichlet,
} from '../../federation/partition/index.ts';
import { loadMnist } from '../../src/data/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';

/** Throws unless the parts are ascending and together hold 0..count−1 exactly once. */
function expectCover(parts: Uint32Array[], count: number): void {
  const seen = new Uint8Array(count);
  for (const p of parts) {
    for (let k = 0; k < p.length; k++) {
      const i = p[k]!;
      if (k > 0 && p[k - 1]! >= i) throw new Error(`part not strictly ascending at ${k}`);
      if (i >= count) throw new Error(`row ${i} out of range`);
      if (seen[i]) throw new Error(`row ${i} appears twice`);
      seen[i] = 1;
    }
  }
  const missing = seen.indexOf(0);
  if (missing >= 0) throw new Error(`row ${missing} is in no part`);
}

/** Deterministic labels with uneven class sizes. */
function skewedLabels(count: number, classCount: number): Uint8Array {
  return Uint8Array.from({ length: count }, (_, i) => (i * i + 3 * i) % classCount);
}

const mnistLabels = loadMnist('train').labels;

describe('partitionIid', () => {
  it('gives sizes that differ by at most one and covers every row', () => {
    const parts = partitionIid(103, 10, 1);
    expectCover(parts, 103);
    expect(parts.map((p) => p.length)).toEqual([11, 11, 11, 10, 10, 10, 10, 10, 10, 10]);
  });

  it('is deterministic in the seed and shuffles', () => {
    expect(partitionIid(1000, 7, 5)).toEqual(partitionIid(1000, 7, 5));
    expect(partitionIid(1000, 7, 5)).not.toEqual(partitionIid(1000, 7, 6));
    // Shuffled, not contiguous blocks of the input.
    const first = partitionIid(1000, 4, 5)[0]!;
    expect(first[first.length - 1]! - first[0]!).toBeGreaterThan(500);
  });

  it('property: covers every row once with balanced sizes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        (count, sites, seed) => {
          fc.pre(sites <= count);
          const parts = partitionIid(count, sites, seed);
          expect(parts).toHaveLength(sites);
          expectCover(parts, count);
          const sizes = parts.map((p) => p.length);
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('rejects more sites than rows and bad seeds', () => {
    expect(() => partitionIid(3, 4, 0)).toThrow(InvalidArgumentError);
    expect(() => partitionIid(10, 2, -1)).toThrow(InvalidArgumentError);
    expect(() => partitionIid(10, 0, 1)).toThrow(InvalidArgumentError);
  });
});

describe('partitionDirichlet', () => {
  it('covers every MNIST row, deterministically', () => {
    const parts = partitionDirichlet(mnistLabels, 10, 100, 0.5, 11);
    expectCover(parts, 60000);
    expect(partitionDirichlet(mnistLabels, 10, 100, 0.5, 11)).toEqual(parts);
    expect(partitionDirichlet(mnistLabels, 10, 100, 0.5, 12)).not.toEqual(parts);
  });

  /** Median over sites of the share of a site's rows in its two largest classes. */
  function medianTopTwoShare(alpha: number): number {
    const stats = partitionStats(mnistLabels, 10, partitionDirichlet(mnistLabels, 10, 50, alpha, 3));
    const shares = stats
      .map((c) => {
        const sorted = [...c].sort((a, b) => b - a);
        return (sorted[0]! + sorted[1]!) / c.reduce((a, b) => a + b, 0);
      })
      .sort((a, b) => a - b);
    return shares[Math.floor(shares.length / 2)]!;
  }

  it('small α is skewed (most sites dominated by two classes), large α is near IID', () => {
    expect(medianTopTwoShare(0.05)).toBeGreaterThan(0.9);
    // IID: the two largest of ten classes hold a bit over 20 %.
    expect(medianTopTwoShare(1000)).toBeLessThan(0.25);
    const iidLike = partitionStats(mnistLabels, 10, partitionDirichlet(mnistLabels, 10, 10, 1000, 4));
    for (const site of iidLike) {
      const total = site.reduce((a, b) => a + b, 0);
      for (const c of site) expect(Math.abs(c / total - 0.1)).toBeLessThan(0.03);
    }
  });

  it('gives every site a row even when α is tiny and rows are few', () => {
    const labels = skewedLabels(40, 4);
    for (let seed = 0; seed < 20; seed++) {
      const parts = partitionDirichlet(labels, 4, 30, 0.01, seed);
      expectCover(parts, 40);
      for (const p of parts) expect(p.length).toBeGreaterThan(0);
    }
  });

  it('property: covers every row once, every site non-empty', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0.01, max: 100, noNaN: true }),
        fc.integer({ min: 0, max: 0xffffffff }),
        (count, classCount, sites, alpha, seed) => {
          fc.pre(sites <= count);
          const parts = partitionDirichlet(skewedLabels(count, classCount), classCount, sites, alpha, seed);
          expect(parts).toHaveLength(sites);
          expectCover(parts, count);
          for (const p of parts) expect(p.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('validates α and labels', () => {
    expect(() => partitionDirichlet(mnistLabels, 10, 10, 0, 1)).toThrow(InvalidArgumentError);
    expect(() => partitionDirichlet(mnistLabels, 10, 10, Number.NaN, 1)).toThrow(InvalidArgumentError);
    expect(() => partitionDirichlet(Uint8Array.from([0, 5]), 3, 1, 1, 1)).toThrow(/labels\[1\] is 5/);
  });
});

describe('sampleDirichlet / gamma', () => {
  it('sums to 1; mean of each component ≈ 1/k', () => {
    const random = new RandomStream(9, 1);
    const mean = new Float64Array(4);
    const n = 4000;
    for (let t = 0; t < n; t++) {
      const p = sampleDirichlet(4, 0.3, random);
      expect(Math.abs(p.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-12);
      for (let i = 0; i < 4; i++) mean[i] = mean[i]! + p[i]! / n;
    }
    for (const m of mean) expect(Math.abs(m - 0.25)).toBeLessThan(0.02);
  });

  it('RandomStream normal has mean ≈ 0 and variance ≈ 1', () => {
    const random = new RandomStream(1, 2);
    let s = 0;
    let s2 = 0;
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const z = random.nextNormal();
      s += z;
      s2 += z * z;
    }
    expect(Math.abs(s / n)).toBeLessThan(0.03);
    expect(Math.abs(s2 / n - 1)).toBeLessThan(0.03);
  });

  it('apportion sums exactly and rounds by largest remainder', () => {
    expect(apportion(10, [1, 1, 1])).toEqual([4, 3, 3]);
    // 3.5, 1.75, 1.75 → 3, 1, 1 and the two leftover rows go to the .75 remainders.
    expect(apportion(7, [0.5, 0.25, 0.25])).toEqual([3, 2, 2]);
    expect(apportion(0, [1, 2])).toEqual([0, 0]);
  });
});

describe('partitionShards', () => {
  it('MNIST 100 × 2 shards of 300: 600 rows per site, few labels per site', () => {
    const parts = partitionShards(mnistLabels, 100, 2, 1);
    expectCover(parts, 60000);
    for (const p of parts) expect(p.length).toBe(600);
    const labelsPerSite = partitionStats(mnistLabels, 10, parts).map((c) => c.filter((n) => n > 0).length);
    // A shard straddles two digits where a digit's count is not a multiple of 300, so a site can
    // see up to 4 labels; the paper's "most sites have 2 digits" holds.
    for (const n of labelsPerSite) expect(n).toBeLessThanOrEqual(4);
    expect(labelsPerSite.filter((n) => n <= 2).length).toBeGreaterThanOrEqual(85);
    expect(partitionShards(mnistLabels, 100, 2, 1)).toEqual(parts);
  });

  it('with label-aligned shards every site holds at most shardsPerSite labels', () => {
    const labels = Uint8Array.from({ length: 200 }, (_, i) => i % 10);
    const parts = partitionShards(labels, 10, 2, 7);
    expectCover(parts, 200);
    for (const c of partitionStats(labels, 10, parts))
      expect(c.filter((n) => n > 0).length).toBeLessThanOrEqual(2);
  });

  it('property: covers every row once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        (count, sites, shardsPerSite, seed) => {
          fc.pre(sites * shardsPerSite <= count);
          const parts = partitionShards(skewedLabels(count, 5), sites, shardsPerSite, seed);
          expectCover(parts, count);
          const sizes = parts.map((p) => p.length);
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(shardsPerSite);
        },
      ),
    );
  });

  it('rejects more shards than rows', () => {
    expect(() => partitionShards(Uint8Array.from([0, 1, 2]), 2, 2, 0)).toThrow(
      /4 shards, more than the 3 rows/,
    );
  });
});

describe('partitionByColumn', () => {
  it('one site per distinct value, in order of first appearance', () => {
    const p = partitionByColumn(['north', 'south', 'north', 'east, annex', 'south']);
    expect(p.sites).toEqual(['north', 'south', 'east, annex']);
    expect(p.indices.map((a) => Array.from(a))).toEqual([[0, 2], [1, 4], [3]]);
    expectCover(p.indices, 5);
  });

  it('handles no rows', () => {
    expect(partitionByColumn([])).toEqual({ sites: [], indices: [] });
  });
});

describe('partitionStats', () => {
  it('counts classes per site', () => {
    const labels = Uint8Array.from([0, 1, 1, 2, 0]);
    expect(partitionStats(labels, 3, [Uint32Array.from([0, 1]), Uint32Array.from([2, 3, 4])])).toEqual([
      [1, 1, 0],
      [1, 1, 1],
    ]);
    expect(() => partitionStats(labels, 3, [[5]])).toThrow(InvalidArgumentError);
  });
});
