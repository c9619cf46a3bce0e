import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { DataError, encodeIdx, loadIdxDataset, readIdx } from '../../src/data/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'cohort-idx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 3 images of 2×2 pixels and their labels. */
const PIXELS = Uint8Array.from([0, 255, 51, 102, 1, 2, 3, 4, 255, 255, 0, 0]);
const LABELS = Uint8Array.from([7, 0, 9]);

function write(name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

function thrown(fn: () => unknown): DataError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DataError);
    return e as DataError;
  }
  throw new Error('expected a DataError');
}

describe('readIdx', () => {
  it('round-trips images (0x00000803) and labels (0x00000801)', () => {
    const images = encodeIdx([3, 2, 2], PIXELS);
    expect(Array.from(images.subarray(0, 4))).toEqual([0, 0, 8, 3]);
    const img = readIdx(write('img', images));
    expect(img.dims).toEqual([3, 2, 2]);
    expect(Array.from(img.data)).toEqual(Array.from(PIXELS));
    const lab = readIdx(write('lab', encodeIdx([3], LABELS)));
    expect(lab.dims).toEqual([3]);
    expect(Array.from(lab.data)).toEqual([7, 0, 9]);
  });

  it('reads gzip files by their magic', () => {
    const path = write('img.gz', gzipSync(encodeIdx([3, 2, 2], PIXELS)));
    expect(Array.from(readIdx(path).data)).toEqual(Array.from(PIXELS));
  });

  it('names expected and actual bytes for a truncated file', () => {
    const full = encodeIdx([3, 2, 2], PIXELS);
    const path = write('short', full.subarray(0, full.length - 5));
    const e = thrown(() => readIdx(path));
    expect(e.code).toBe('DATA_FORMAT');
    expect(e.message).toBe(
      `${path}, field "data": truncated: dimensions 3×2×2 need 28 bytes (16 header + 12 data), file has 23`,
    );
    expect(e.details).toMatchObject({ file: path, field: 'data', expected: 28, actual: 23 });
  });

  it('rejects trailing bytes, a bad magic, other element types and a cut header', () => {
    const full = encodeIdx([3], LABELS);
    expect(thrown(() => readIdx(write('long', Uint8Array.from([...full, 0])))).message).toMatch(
      /trailing bytes: .*need 11 bytes.*file has 12/,
    );
    const bad = thrown(() => readIdx(write('magic', Uint8Array.from([1, 2, 8, 1, 0, 0, 0, 0]))));
    expect(bad.code).toBe('DATA_FORMAT');
    expect(bad.message).toContain('field "magic": 0x01020801 is not an IDX magic');
    const float = thrown(() => readIdx(write('float', Uint8Array.from([0, 0, 0x0d, 1, 0, 0, 0, 0]))));
    expect(float.message).toContain('element type 0x0d (float32) is not supported');
    const cut = thrown(() => readIdx(write('cut', Uint8Array.from([0, 0, 8, 3, 0, 0, 0, 3]))));
    expect(cut.message).toContain('16-byte header, file has 8 bytes');
    expect(thrown(() => readIdx(write('tiny', Uint8Array.from([0, 0])))).code).toBe('DATA_FORMAT');
  });

  it('reports a missing file as DATA_FILE_MISSING with its path', () => {
    const path = join(dir, 'nope');
    const e = thrown(() => readIdx(path));
    expect(e.code).toBe('DATA_FILE_MISSING');
    expect(e.message).toBe(`${path}: no such file`);
  });
});

describe('loadIdxDataset', () => {
  const images = write('ds-img', encodeIdx([3, 2, 2], PIXELS));
  const labels = write('ds-lab', encodeIdx([3], LABELS));

  it('scales pixels to [0, 1] and keeps labels', () => {
    const d = loadIdxDataset(images, labels);
    expect(d).toMatchObject({ count: 3, featureCount: 4, classCount: 10 });
    expect(Array.from(d.features.subarray(0, 4))).toEqual([0, 1, Math.fround(0.2), Math.fround(0.4)]);
    expect(Array.from(d.labels)).toEqual([7, 0, 9]);
    const first = loadIdxDataset(images, labels, { limit: 2 });
    expect(first.count).toBe(2);
    expect(first.features.length).toBe(8);
  });

  it('names both counts when images and labels disagree', () => {
    const two = write('ds-lab2', encodeIdx([2], LABELS.subarray(0, 2)));
    const e = thrown(() => loadIdxDataset(images, two));
    expect(e.code).toBe('DATA_SHAPE');
    expect(e.message).toBe(`${two}, field "count": 2 labels, but ${images} has 3 images`);
  });

  it('names the item of a label outside [0, classCount)', () => {
    const e = thrown(() => loadIdxDataset(images, labels, { classCount: 8 }));
    expect(e.code).toBe('DATA_LABEL_RANGE');
    expect(e.message).toBe(`${labels}, field "label[2]": label 9 is outside [0, 8)`);
  });
});
