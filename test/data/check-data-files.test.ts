import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CheckDataOptions,
  checkDataFiles,
  type DataError,
  formatDataFileReport,
  writeIdx,
  writeNpy,
} from '../../src/data/index.ts';
import { InvalidArgumentError } from '../../src/errors/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A fresh folder under the test directory. */
function folder(): string {
  const d = join(dir, `case-${n++}`);
  mkdirSync(d);
  return d;
}

function idxPair(d: string, rows: number, labels: number[], inner = [28, 28]): [string, string] {
  const size = inner.reduce((a, b) => a * b, 1);
  const images = join(d, 'train-images-idx3-ubyte.gz');
  const lab = join(d, 'train-labels-idx1-ubyte.gz');
  writeIdx(images, [rows, ...inner], new Uint8Array(rows * size).fill(3));
  writeIdx(lab, [labels.length], Uint8Array.from(labels));
  return [images, lab];
}

function failure(paths: string[], options: CheckDataOptions = {}): DataError {
  const r = checkDataFiles(paths, options);
  if (r.ok) throw new Error('expected the check to fail');
  return r.error;
}

describe('checkDataFiles', () => {
  it('reports a valid IDX pair (given as files or as its folder) with a label histogram', () => {
    const d = folder();
    const [images, labels] = idxPair(d, 4, [0, 2, 2, 1]);
    const r = checkDataFiles([d], { classCount: 3, imageShape: [28, 28] });
    expect(r.ok).toBe(true);
    expect(r.files).toEqual([
      { file: images, kind: 'idx-images', rows: 4, shape: [4, 28, 28] },
      { file: labels, kind: 'idx-labels', rows: 4, shape: [4], histogram: [1, 1, 2] },
    ]);
    expect(formatDataFileReport(r.files[1]!)).toBe(
      `${labels}: idx-labels, 4 rows, shape [4], labels 0:1 1:1 2:2`,
    );
    expect(checkDataFiles([images, labels]).ok).toBe(true);
  });

  it('reports a valid .npy pair, flat features accepted for an image shape', () => {
    const d = folder();
    writeNpy(join(d, 'features.npy'), [3, 4], '<f4', new Array(12).fill(0.5));
    writeNpy(join(d, 'labels.npy'), [3], '<i8', [1, 0, 1]);
    const r = checkDataFiles([d], { classCount: 2, imageShape: [2, 2] });
    expect(r.ok).toBe(true);
    expect(r.files.map((f) => f.kind)).toEqual(['npy-features', 'npy-labels']);
    expect(r.files[1]!.histogram).toEqual([1, 2]);
  });

  it('reports a valid CSV with its label column', () => {
    const d = folder();
    const csv = join(d, 'site.csv');
    writeFileSync(csv, 'a,b,y\n1,2,0\n3,4,1\n5,6,1\n');
    const r = checkDataFiles([csv], { labelColumn: 'y', classCount: 2 });
    expect(r.ok).toBe(true);
    expect(r.files[0]).toEqual({ file: csv, kind: 'csv', rows: 3, shape: [3, 2], histogram: [1, 2] });
  });

  it('refuses a label outside the classes, naming file and row', () => {
    const d = folder();
    const [, labels] = idxPair(d, 3, [0, 1, 7]);
    const e = failure([d], { classCount: 3 });
    expect(e.code).toBe('DATA_LABEL_RANGE');
    expect(e.message).toBe(`${labels}, field "label[2]": label 7 is not an integer in [0, 3)`);
    const n2 = folder();
    writeNpy(join(n2, 'features.npy'), [2, 1], '<f4', [0, 0]);
    writeNpy(join(n2, 'labels.npy'), [2], '<f4', [0, 1.5]);
    expect(failure([n2]).message).toContain('field "label[1]": label 1.5 is not an integer');
  });

  it('refuses a wrong image size', () => {
    const d = folder();
    const [images] = idxPair(d, 2, [0, 1], [28, 27]);
    const e = failure([d], { imageShape: [28, 28] });
    expect(e.code).toBe('DATA_SHAPE');
    expect(e.message).toBe(`${images}, field "dimensions": each example is 28×27, expected 28×28`);
  });

  it('refuses a row with text in a number column, naming line and field', () => {
    const csv = join(folder(), 'bad.csv');
    writeFileSync(csv, 'a,b,y\n1,2,0\n3,abc,1\n');
    const e = failure([csv], { labelColumn: 'y' });
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toContain(`${csv} line 3, field "b"`);
  });

  it('refuses a missing column', () => {
    const csv = join(folder(), 'nolabel.csv');
    writeFileSync(csv, 'a,b\n1,2\n');
    const e = failure([csv], { labelColumn: 'y' });
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toContain(`${csv} line 1, field "y"`);
  });

  it('refuses mismatched row counts between images and labels', () => {
    const d = folder();
    const [images, labels] = idxPair(d, 3, [0, 1]);
    const e = failure([d]);
    expect(e.code).toBe('DATA_SHAPE');
    expect(e.message).toBe(`${labels}, field "rows": 2 labels, but ${images} has 3 rows`);
    const n2 = folder();
    writeNpy(join(n2, 'features.npy'), [3, 1], '<f4', [0, 0, 0]);
    writeNpy(join(n2, 'labels.npy'), [4], '|u1', [0, 0, 0, 0]);
    expect(failure([n2]).code).toBe('DATA_SHAPE');
  });

  it('refuses a file without its pair, a missing file and a corrupt one', () => {
    const d = folder();
    writeNpy(join(d, 'labels.npy'), [1], '|u1', [0]);
    expect(failure([d]).message).toContain('field "pair"');
    const missing = join(d, 'nope-idx1-ubyte');
    expect(failure([missing]).code).toBe('DATA_FILE_MISSING');
    const corrupt = join(folder(), 'x-idx1-ubyte');
    writeFileSync(corrupt, Uint8Array.from([0, 0, 8, 1, 0, 0, 0, 9, 1]));
    const e = failure([corrupt]);
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toContain(corrupt);
  });

  it('keeps the files checked before the first error, and throws on bad arguments', () => {
    const good = folder();
    idxPair(good, 2, [0, 1]);
    const bad = folder();
    idxPair(bad, 2, [0, 9]);
    const r = checkDataFiles([good, bad], { classCount: 2 });
    expect(r.ok).toBe(false);
    expect(r.files).toHaveLength(3);
    const csv = join(good, 'x.csv');
    writeFileSync(csv, 'a,y\n1,0\n');
    expect(() => checkDataFiles([csv])).toThrow(InvalidArgumentError);
    expect(() => checkDataFiles([])).toThrow(InvalidArgumentError);
  });
});
