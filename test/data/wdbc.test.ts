import { describe, expect, it } from 'vitest';
import type { Dataset } from '../../gpu/engine/index.ts';
import {
  applyStandardizer,
  fitStandardizer,
  loadWdbc,
  subset,
  trainTestSplit,
} from '../../src/data/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';

function columnMoments(d: Dataset, j: number): { mean: number; std: number } {
  let sum = 0;
  for (let r = 0; r < d.count; r++) sum += d.features[r * d.featureCount + j]!;
  const mean = sum / d.count;
  let sq = 0;
  for (let r = 0; r < d.count; r++) sq += (d.features[r * d.featureCount + j]! - mean) ** 2;
  return { mean, std: Math.sqrt(sq / d.count) };
}

function classCounts(labels: ArrayLike<number>, k: number): number[] {
  const c = new Array<number>(k).fill(0);
  for (let i = 0; i < labels.length; i++) c[labels[i]!]!++;
  return c;
}

describe('WDBC', () => {
  const wdbc = loadWdbc();
  const d = wdbc.dataset;

  it('has 569 rows × 30 features and 212 malignant / 357 benign', () => {
    expect(d).toMatchObject({ count: 569, featureCount: 30, classCount: 2 });
    expect(wdbc.featureNames).toHaveLength(30);
    expect(wdbc.featureNames[0]).toBe('radius_mean');
    expect(wdbc.featureNames).not.toContain('diagnosis');
    expect(classCounts(d.labels, 2)).toEqual([212, 357]);
    expect(d.features[0]).toBe(Math.fround(17.99));
    expect(d.features[29]).toBe(Math.fround(0.1189));
  });

  it('stratified split keeps class proportions and covers every row once', () => {
    const split = trainTestSplit(d, 0.2, 42);
    expect(split.test.length).toBe(114);
    expect(split.train.length).toBe(455);
    const all = [...split.train, ...split.test].sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: 569 }, (_, i) => i));
    const test = subset(d, split.test);
    // 114 · 212/569 = 42.47 → 42 malignant, 72 benign.
    expect(classCounts(test.labels, 2)).toEqual([42, 72]);
    expect(trainTestSplit(d, 0.2, 42)).toEqual(split);
    expect(trainTestSplit(d, 0.2, 43).test).not.toEqual(split.test);
  });

  it('standardizer fitted on train gives mean ≈ 0, std ≈ 1 on train and applies to test', () => {
    const split = trainTestSplit(d, 0.25, 7);
    const train = subset(d, split.train);
    const test = subset(d, split.test);
    const s = fitStandardizer(train);
    const trainZ = applyStandardizer(train, s);
    const testZ = applyStandardizer(test, s);
    for (let j = 0; j < 30; j++) {
      const m = columnMoments(trainZ, j);
      expect(Math.abs(m.mean)).toBeLessThan(1e-5);
      expect(Math.abs(m.std - 1)).toBeLessThan(1e-5);
      // Test data uses the train statistics: close to, but not exactly, standard.
      expect(Math.abs(columnMoments(testZ, j).mean)).toBeLessThan(0.5);
    }
    expect(testZ.labels).toEqual(test.labels);
    expect(train.features[0]).toBe(d.features[split.train[0]! * 30]);
  });

  it('a constant feature gets std 1 and maps to 0', () => {
    const data: Dataset = {
      features: Float32Array.from([5, 1, 5, 2, 5, 3]),
      labels: Uint8Array.from([0, 1, 0]),
      count: 3,
      featureCount: 2,
      classCount: 2,
    };
    const s = fitStandardizer(data);
    expect(s.std[0]).toBe(1);
    expect(Array.from(applyStandardizer(data, s).features.filter((_, i) => i % 2 === 0))).toEqual([0, 0, 0]);
  });

  it('subset and split validate their arguments', () => {
    expect(() => subset(d, [569])).toThrow(InvalidArgumentError);
    expect(() => subset(d, [])).toThrow(InvalidArgumentError);
    expect(() => trainTestSplit(d, 1, 0)).toThrow(InvalidArgumentError);
    expect(subset(d, [3, 3]).count).toBe(2);
  });
});
